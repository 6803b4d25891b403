"""MCP calls outlive the server: ``outlast serve`` SIGKILLed while a task runs and a
blocking call waits, then started again on the same database; the ``mcp`` SDK's client
gets the task's result from the new process, and the blocking call, retried with its
idempotency key, gets its run's output without a second run (both backends)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.harness import eventually
from tests.mcp_client import Peer, connect
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

STEPS = 30
SLOW: Any = {"outlast/config": {"configurable": {"steps": STEPS, "delay": 0.1}}}
KEY = {"outlast/idempotency_key": "the-one-call", **SLOW}


async def _tasks(peer: Peer) -> list[str]:
    raw = await peer.wire.send_raw_request("tasks/list", {})
    return [t["taskId"] for t in raw["tasks"]]


async def test_a_task_and_a_blocking_call_survive_a_sigkill(db_url: str, tmp_path: Path) -> None:
    server, url = start_server(db_url, tmp_path / "s1.log")
    port = int(url.rsplit(":", 1)[1])
    progressed = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        progressed.set()

    try:
        async with connect(url) as peer:
            task_id = await peer.call_as_task("lg_slow", {}, **SLOW)
            blocking = asyncio.create_task(
                peer.session.call_tool("lg_slow", {}, progress_callback=progress, meta=KEY)
            )
            await asyncio.wait_for(progressed.wait(), 60)  # its run is under way
            assert (await peer.task(task_id)).status == "working"
            server.send_signal(signal.SIGKILL)
            assert server.wait(timeout=30) == -signal.SIGKILL
            with pytest.raises(MCPError):  # the connection closed under the call
                await asyncio.wait_for(blocking, 60)
    finally:
        kill(server)
    server, url = start_server(db_url, tmp_path / "s2.log", port=port)
    try:
        async with connect(url) as peer:
            got = await peer.task_result(task_id)  # waits for the run, taken over by s2
            assert (await peer.task(task_id)).status == "completed"
            again = await peer.session.call_tool("lg_slow", {}, meta=KEY)
            listed = await eventually(lambda: _tasks(peer), what="tasks/list")
    finally:
        kill(server)
    assert got.structured_content is not None
    assert got.structured_content["done"] == list(range(STEPS))
    assert again.structured_content["done"] == list(range(STEPS))
    assert again.meta is not None and again.meta["outlast/run_id"] in listed
    assert len(listed) == 2  # the task's run and the blocking call's: nothing ran twice
