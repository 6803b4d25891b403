"""outlast installs beside the packages LangGraph apps bring (issue 43, bug 4): one fresh
environment with outlast (from this working tree, as a user would get it: not editable,
no extras) and ``langchain-mcp-adapters``, ``deepagents``, ``langchain-openai``,
``langchain-anthropic``, ``langgraph-supervisor`` and ``trustcall``; ``pip check`` is
clean; every one of them imports; and ``outlast serve`` starts on an embedded data dir,
answers ``/ok``, and runs a graph that imports them all through the LangGraph face.

``langchain-mcp-adapters`` holds ``mcp`` below 2 and the MCP face needs 2.3 (the extra
``outlast[mcp]``): the server starts without the face, says so once in its banner, and
``/mcp`` answers 501 saying how to enable it.

Beside it, outlast with each of its dependencies at the lowest version it declares (a
floor set below what outlast uses fails there).

Everything comes from the package index (on the test machine about 30 s for the first
test, 10 s for the second): marked ``long`` so that the rest of the suite runs beside
them.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from tests.procs import kill, wait_ready

pytestmark = [pytest.mark.long, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
ECOSYSTEM = [
    "langchain-mcp-adapters",
    "deepagents",
    "langchain-openai",
    "langchain-anthropic",
    "langgraph-supervisor",
    "trustcall",
]

# A graph of an app that brings them all: each imported as the app would, nothing called
# that needs a model's key; the run reports what it saw.
AGENT = """
import importlib.metadata

import deepagents
import langchain_anthropic
import langchain_openai
import langgraph_supervisor
import trustcall
from langchain_mcp_adapters.client import MultiServerMCPClient
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


class State(TypedDict, total=False):
    asked: str
    seen: dict


def look(state: State) -> State:
    names = ["mcp", "langchain-mcp-adapters", "deepagents", "outlast"]
    return {"seen": {n: importlib.metadata.version(n) for n in names}}


builder = StateGraph(State)
builder.add_node("look", look)
builder.add_edge(START, "look")
builder.add_edge("look", END)
graph = builder.compile()
"""


def _run(args: list[str], timeout: float, cwd: Path | None = None) -> str:
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_clean_env()
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{said[-6000:]}"
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what points at the suite's own environment
    (its virtualenv, its Python path, its database)."""
    dropped = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("OUTLAST_")}
    return {**env, **extra}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _source(into: Path) -> Path:
    """What a wheel of outlast is built from, copied out of the working tree (a build in
    the tree writes ``build/`` there, under other tests' and people's feet)."""
    src = into / "outlast-src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "outlast", src / "outlast", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def _venv(tmp_path: Path) -> tuple[Path, list[str]]:
    """A new, empty environment, and this suite's pip aimed at it (it has no pip of its
    own: ensurepip takes seconds)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv, [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


def _serve(venv: Path, app: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``outlast serve`` of ``venv`` in ``app`` (its langgraph.json, if any), on an embedded
    data dir, once ready. On a port of its own, not a socket handed over: a process given
    its socket is one of ``--workers N``, which leaves the banner to its parent."""
    log = tmp_path / "server.log"
    port = _free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(venv / "bin" / "outlast"), "serve", "--port", str(port), "--log-level", "info"],
            env=_clean_env(OUTLAST_DATA_DIR=str(tmp_path / "data")),
            cwd=app,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    wait_ready(proc, url, log)
    return proc, url, log


def test_outlast_installs_and_serves_beside_the_ecosystem(tmp_path: Path) -> None:
    started = time.monotonic()
    venv, pip = _venv(tmp_path)
    _run([*pip, "install", "-q", str(_source(tmp_path)), *ECOSYSTEM], timeout=900)
    installed = time.monotonic()
    checked = _run([*pip, "check"], timeout=120)
    assert "No broken requirements found." in checked, checked
    versions = json.loads(_run([*pip, "list", "--format", "json"], timeout=120))
    have = {p["name"].lower(): p["version"] for p in versions}
    assert all(name in have for name in [*ECOSYSTEM, "outlast"]), have
    assert int(have["mcp"].split(".")[0]) < 2  # the adapters' mcp, kept as they want it

    app = tmp_path / "app"
    app.mkdir()
    (app / "agent.py").write_text(AGENT)
    (app / "langgraph.json").write_text(json.dumps({"graphs": {"eco": "./agent.py:graph"}}))
    proc, url, log = _serve(venv, app, tmp_path)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/ok").json() == {"ok": True}
            mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert mcp.status_code == 501, mcp.text
            assert "outlast[mcp]" in mcp.json()["detail"]
        result = _lg_run(url, "eco", {"asked": "hi"})
        assert result["seen"] == {
            "mcp": have["mcp"],
            "langchain-mcp-adapters": have["langchain-mcp-adapters"],
            "deepagents": have["deepagents"],
            "outlast": have["outlast"],
        }
        said = log.read_text(errors="replace")
        assert said.count("mcp:   off") == 1, said  # said once, in the banner
        assert f"mcp {have['mcp']} is installed" in said, said
        assert "Traceback" not in said, said
    finally:
        kill(proc)
    print(
        f"\nthe ecosystem environment: installed in {installed - started:.0f} s, "
        f"served and ran in {time.monotonic() - installed:.0f} s"
    )


def test_outlast_serves_on_the_lowest_versions_it_declares(tmp_path: Path) -> None:
    """Each of outlast's dependencies at the lowest version ``pyproject.toml`` allows
    (uv's ``lowest-direct``; theirs at their newest): a floor set too low (a column
    outlast's SQLite saver writes, which ``langgraph-checkpoint-sqlite`` 3.1.0 lacked)
    fails here, not in a user's environment."""
    venv, pip = _venv(tmp_path)
    _run([*pip, "install", "-q", "uv"], timeout=300)
    uv = [str(venv / "bin" / "uv"), "pip"]
    target = ["--python", str(venv / "bin" / "python")]
    source = str(_source(tmp_path))
    _run([*uv, "install", "-q", *target, "--resolution", "lowest-direct", source], timeout=900)
    _run([*uv, "check", *target], timeout=120)
    app = tmp_path / "app"  # no langgraph.json: outlast's own graphs
    app.mkdir()
    proc, url, log = _serve(venv, app, tmp_path)
    try:
        said = {"role": "user", "content": "hi"}
        result = _lg_run(url, "steps", {"messages": [said]})
        assert result["steps"] == ["plan", "gather", "draft", "review", "finish"], result
        assert "Traceback" not in log.read_text(errors="replace")
    finally:
        kill(proc)


def _lg_run(url: str, graph: str, given: dict[str, object]) -> dict[str, Any]:
    """One run of ``graph`` through the LangGraph face, with LangGraph's SDK."""

    async def run() -> dict[str, Any]:
        client = get_client(url=url)
        try:
            thread = await client.threads.create()
            found = await client.runs.wait(thread["thread_id"], graph, input=given)
        finally:
            await client.aclose()
        assert isinstance(found, dict) and "__error__" not in found, found
        return found

    return asyncio.run(run())
