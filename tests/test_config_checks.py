"""A configuration mistake stops every command that reads ``langgraph.json`` before it
starts, and names the mistake in one line on stderr (exit 2): a key close to one
LangGraph knows ("did you mean `graphs`?"), a ``--config`` that does not exist, a file
with no graphs. ``langgraph dev`` refuses the same three (``Path 'nope.json' does not
exist``; ``No graphs found in config``, which is what ``grpahs`` comes to there).
outlast's own demo graphs are served only when no configuration was given at all; an
``env`` file that does not exist is a warning, and the server starts, as ``langgraph dev``
starts. Real processes, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast import processes
from tests.procs import kill, wait_ready

pytestmark = pytest.mark.slow

GRAPH = "outlast.graph.example:graph"
DEMO = {"agent", "steps", "booking"}

COMMANDS = {
    "serve": ["serve", "--port", "0"],
    "worker": ["worker"],
    "migrate": ["migrate"],
    "secrets": ["secrets", "check"],
}
# (what langgraph.json holds, or None: --config names a file that is not there; what the
# one line says)
MISTAKES: dict[str, tuple[Any, str]] = {
    "typo": (
        {"grpahs": {"agent": GRAPH}},
        "grpahs: not a key LangGraph knows; did you mean `graphs`?",
    ),
    "missing": (None, "nope.json: no such file"),
    "no graphs": ({"graphs": {}, "auth": {"path": "./auth.py:auth"}}, "no graphs"),
}


def _env(folder: Path) -> dict[str, str]:
    """The environment of a user's shell: none of the suite's OUTLAST_* settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OUTLAST_")}
    return {**clean, "OUTLAST_DATA_DIR": str(folder / "data"), "OUTLAST_WORKERS": "1"}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_configuration_mistake_stops_every_command_and_names_it(
    tmp_path: Path, command: str, mistake: str
) -> None:
    data, said = MISTAKES[mistake]
    config = tmp_path / "nope.json"
    if data is not None:
        config = tmp_path / "langgraph.json"
        config.write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "outlast.cli", *COMMANDS[command], "--config", str(config)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # one line, whatever the terminal's width
    assert lines[0].startswith(f"cannot serve {config}: ") and said in lines[0], lines[0]
    assert not (tmp_path / "data").exists()  # nothing was started: no store, no port


def test_the_default_langgraph_json_is_checked_as_a_named_one(tmp_path: Path) -> None:
    """``./langgraph.json``, read when no ``--config`` names another, is held to the same
    checks: its typo is not a reason to serve the demo graphs."""
    (tmp_path / "langgraph.json").write_text(json.dumps({"grpahs": {"agent": GRAPH}}))
    done = subprocess.run(
        [sys.executable, "-m", "outlast.cli", "serve", "--port", "0"],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "did you mean `graphs`?" in done.stderr and "serving on" not in done.stderr


@contextmanager
def _serving(folder: Path, *flags: str) -> Iterator[tuple[str, Path]]:
    """``outlast serve`` run in ``folder`` as a user runs it there (its URL, its log)."""
    log = folder / "server.log"
    with processes.listen("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
        env = processes.handed_over(sock, _env(folder))
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "outlast.cli", "serve", "--port", str(port), *flags],
                cwd=folder,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(sock.fileno(),),
            )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, url, log)
        yield url, log
    finally:
        kill(proc, signal.SIGTERM)


def _graphs(url: str) -> set[str]:
    """The graphs served: LangGraph's system assistants, one per graph."""
    found = httpx.post(f"{url}/assistants/search", json={"limit": 100}, timeout=30)
    found.raise_for_status()
    return {a["graph_id"] for a in found.json()}


def test_the_demo_graphs_only_without_any_configuration(tmp_path: Path) -> None:
    """No ``--config``, no ``./langgraph.json``, no ``--graph``: outlast's demo graphs. A
    ``./langgraph.json`` in the working directory is read without ``--config``, as
    ``langgraph dev`` reads it, and only its graphs are served."""
    bare = tmp_path / "bare"
    bare.mkdir()
    with _serving(bare) as (url, _):
        assert _graphs(url) == DEMO
    app = tmp_path / "app"
    app.mkdir()
    (app / "langgraph.json").write_text(json.dumps({"graphs": {"mine": GRAPH}}))
    with _serving(app) as (url, _):
        assert _graphs(url) == {"mine"}


def test_a_missing_env_file_is_a_warning_and_the_server_starts(tmp_path: Path) -> None:
    """``langgraph dev`` starts with an ``env`` file that is not there (read as empty);
    outlast too, and says so once."""
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"mine": GRAPH}, "env": ".env"}))
    with _serving(tmp_path, "--config", str(config)) as (url, log):
        assert _graphs(url) == {"mine"}
        said = " ".join(log.read_text(errors="replace").split())
    assert said.count(f"env: {tmp_path / '.env'} does not exist") == 1, said
