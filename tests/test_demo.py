"""``outlast demo`` as a user runs it: a subprocess, its exit code and its summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from outlast.demo.scenario import EXPECTED
from outlast.demo.servers import write_graphs
from outlast.graph.registry import GraphRegistry

pytestmark = pytest.mark.slow


def _demo(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OUTLAST_")}
    return subprocess.run(
        [sys.executable, "-m", "outlast.cli", "demo", "--data-dir", str(tmp_path), "--port", "0"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=540,  # within the slow tests' timeout (conftest.py): its output, not a kill
        cwd=tmp_path,  # anywhere: the demo does not need the repository
    )


def _row(output: str, step: str) -> str:
    return next(line for line in output.splitlines() if line.startswith(f"│ {step} "))


def test_the_demo_shows_every_step(tmp_path: Path) -> None:
    done = _demo(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for step in EXPECTED:
        assert "✓" in _row(done.stdout, step), step
    assert "result: all OK (8 steps)" in done.stdout
    assert "/events" in done.stdout.split("outlast demo")[-1]  # the run's events URL
    outbox = list((tmp_path / "demo" / "outbox").glob("*.eml"))
    assert len(outbox) == 1


def test_the_demo_fails_loudly_when_a_step_does_not_happen(tmp_path: Path) -> None:
    # No key for the model: the run is refused at acceptance, so nothing else can happen.
    done = _demo(tmp_path, OUTLAST_MODEL="openai:gpt-4o-mini", OPENAI_API_KEY="")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "✗" in _row(done.stdout, "accepted") and "OPENAI_API_KEY" in done.stdout
    assert "✗" in _row(done.stdout, "email sent once")
    assert "FAILED" in done.stdout


def test_the_demo_serves_what_outlast_serve_serves(tmp_path: Path) -> None:
    """After the demo (`make run`) its server goes on serving; it must offer the graphs the
    README lists for `outlast serve`, the repository's langgraph.json, and the same
    objects (that file names them by path, the demo by module)."""
    repo = GraphRegistry.from_config(Path(__file__).parent.parent / "langgraph.json")
    demo = GraphRegistry.from_config(write_graphs(tmp_path))
    assert demo.names == repo.names == ["agent", "steps", "booking", "supervisor"]
    for name in repo.names:
        assert type(demo.static(name)) is type(repo.static(name)), name
        mine, theirs = demo.static(name).get_graph(), repo.static(name).get_graph()
        assert mine.to_json() == theirs.to_json(), name
