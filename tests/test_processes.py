"""``--workers N``: one ``outlast serve`` as N processes on one socket, supervised by their
parent; they share the work through Postgres, live and die as one."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from outlast import processes
from tests.harness import ADMIN_URL, create_database, eventually
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

# Each process holds one run at a time, and a run of `slow` holds its process for a minute:
# two runs running at once are two processes working.
ONE_RUN_EACH = {"OUTLAST_WORKERS": "2", "OUTLAST_WORKER_CONCURRENCY": "1"}
HOLD = {"graph": "slow", "input": {}, "config": {"configurable": {"sleep": 60}}}


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of its own: runs a killed set left behind are no other test's queue."""
    url = create_database("outlast_procs")
    yield url
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[-1]}" WITH (FORCE)')


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (this machine's pid 1 may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def _two_runs_running(url: str) -> set[int]:
    """The pids of the processes that hold two runs of ``slow``, once both run."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        ids = [(await client.post("/v1/runs", json=HOLD)).json()["id"] for _ in range(2)]

        async def holders() -> set[int] | None:
            snaps = [(await client.get(f"/v1/runs/{run_id}")).json() for run_id in ids]
            if not all(s["status"] == "running" and s["lease"] for s in snaps):
                return None
            # worker ids are host:pid:nonce
            return {int(s["lease"]["worker_id"].split(":")[1]) for s in snaps}

        pids = await eventually(holders, what="both runs running")
        assert len(pids) == 2, pids  # one run per process: two processes took them
        return pids


async def test_two_processes_share_the_work_and_die_with_their_parent(
    pg_url: str, tmp_path: Path
) -> None:
    parent, url = start_server(pg_url, tmp_path / "server.log", **ONE_RUN_EACH)
    try:
        pids = await _two_runs_running(url)
        assert parent.pid not in pids  # the parent supervises; its children work
        assert all(_alive(pid) for pid in pids)
        kill(parent)  # SIGKILL, as a machine dies: the set dies with it
        await eventually(lambda: not any(_alive(pid) for pid in pids), what="children gone")
    finally:
        kill(parent)


async def test_a_child_that_dies_stops_the_set_with_a_failure(pg_url: str, tmp_path: Path) -> None:
    parent, url = start_server(pg_url, tmp_path / "server.log", **ONE_RUN_EACH)
    try:
        first, second = sorted(await _two_runs_running(url))
        os.kill(first, signal.SIGKILL)
        # the other child is stopped (it drains, its run goes back to the queue) and the
        # parent exits non-zero, so that systemd or Kubernetes restarts the whole set
        code = await eventually(lambda: parent.poll(), what="the parent exits")
        assert code != 0
        assert not _alive(second)
    finally:
        kill(parent)


async def test_children_serve_when_langgraph_json_warns(pg_url: str, tmp_path: Path) -> None:
    """The start-up checks of a child never touch its inherited socket: a langgraph.json
    with keys outlast ignores (a warning) once made each child close it unused (EBADF)."""
    config = tmp_path / "langgraph.json"
    tests = Path(__file__).resolve().parent
    graphs = {"slow": f"{tests}/graphs.py:slow"}
    config.write_text(json.dumps({"graphs": graphs, "bogus": 1}))
    log = tmp_path / "server.log"
    parent, url = start_server(pg_url, log, "--config", str(config), **ONE_RUN_EACH)
    try:
        assert sorted(await _two_runs_running(url))  # both children serve
        said = " ".join(log.read_text(errors="replace").split())
        # the parent's (bogus is no key LangGraph knows: a warning of its own)
        assert said.count("LangGraph does not know these keys, and ignores them: bogus") == 1
    finally:
        kill(parent)


def test_several_processes_need_postgres(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "outlast.cli", "serve", "--data-dir", str(tmp_path)),
            *("--port", "0", "--workers", "2"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs Postgres" in done.stderr


async def test_a_child_serves_the_inherited_socket_as_tcp_without_nagle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each child serves the parent's socket; asyncio turns Nagle's algorithm off only on
    the connections of a socket it knows is TCP (a descriptor wrapped as ``AF_UNIX``, as
    uvicorn's ``fd`` does, leaves it on: about 40 ms more per response)."""
    parent = processes.bind("127.0.0.1", 0)
    monkeypatch.setenv(processes.FD_ENV, str(parent.fileno()))
    sock = processes.inherited_socket()
    # one descriptor, now owned by ``sock`` (as in a child, which has no ``parent``)
    parent.detach()
    assert sock is not None and sock.family == socket.AF_INET
    seen: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(handle, sock=sock)
    try:
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        await eventually(lambda: bool(seen))
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
    assert seen == [1]
