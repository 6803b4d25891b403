"""The MCP face is an extra (``outlast[mcp]``, issue 43 bug 4): without a usable ``mcp``
the server starts all the same, says once in its banner that the face is off and why,
serves every other face, and ``/mcp`` answers 501 saying how to enable it. (With mcp 1.x,
as ``langchain-mcp-adapters`` brings it: ``tests/test_ecosystem_install.py``.)"""

from __future__ import annotations

import importlib.metadata
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from outlast.api import mcp as mcp_face
from tests.harness import GRAPHS, post_run, wait_result
from tests.procs import kill, wait_ready

# `outlast serve` in a process where mcp was never installed: its modules do not import
# and its distribution is not there.
WITHOUT_MCP = """
import importlib.abc, importlib.metadata, runpy, sys

class NoMcp(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("mcp", "mcp_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMcp())
version = importlib.metadata.version

def without_mcp(name):
    if name in ("mcp", "mcp-types"):
        raise importlib.metadata.PackageNotFoundError(name)
    return version(name)

importlib.metadata.version = without_mcp
sys.argv = ["outlast", *sys.argv[1:]]
runpy.run_module("outlast.cli", run_name="__main__")
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve_without_mcp(folder: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()  # its own port: a handed-over socket would keep the banner quiet
    args = ["serve", "--port", str(port), "--config", str(GRAPHS), "--data-dir", str(folder)]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", WITHOUT_MCP, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).parent.parent,
        )
    url = f"http://127.0.0.1:{port}"
    wait_ready(proc, url, log)
    return proc, url


@pytest.mark.slow
async def test_the_server_starts_and_serves_without_mcp(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc, url = _serve_without_mcp(tmp_path / "data", log)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            assert (await client.get("/ok")).status_code == 200
            for method in ("GET", "POST", "DELETE"):
                off = await client.request(method, "/mcp", json={"jsonrpc": "2.0", "id": 1})
                assert off.status_code == 501, off.text
                assert off.headers["content-type"] == "application/problem+json"
                detail = off.json()["detail"]
                assert "mcp is not installed" in detail and "outlast[mcp]" in detail
            run = await post_run(client, graph="steps", input={"messages": []})
            assert (await wait_result(client, run["id"]))["status"] == "completed"
        said = log.read_text(errors="replace")
        assert said.count("mcp:   off") == 1, said
        assert "mcp is not installed; pip install 'outlast[mcp]'" in said, said
        assert "Traceback" not in said, said
    finally:
        kill(proc)


def test_why_the_face_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the banner and ``/mcp`` say, for each way the face can be missing."""
    off = mcp_face.off.__wrapped__  # not the process's cached answer
    assert off() is None  # the dev extra brings mcp 2.x: the face is served

    def installed(version: str) -> None:
        monkeypatch.setattr(importlib.metadata, "version", lambda name: version)

    installed("1.30.0")  # langchain-mcp-adapters' mcp
    said = off()
    assert said is not None and said.startswith("mcp 1.30.0 is installed")
    assert "mcp>=2.3" in said and "outlast[mcp]" in said
    installed("2.3.0")
    assert off() is None

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert off() == "mcp is not installed; pip install 'outlast[mcp]'"
