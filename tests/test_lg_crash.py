"""A LangGraph client across a SIGKILL of the whole server: the stream it was reading is
finished by ``join_stream`` after a restart, with nothing lost and nothing twice, and
the run itself is finished from its last checkpoint (outlast's recovery, under the
LangGraph face)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from tests.harness import eventually
from tests.lg_util import follow_slow
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow


async def test_a_stream_cut_by_a_sigkill_goes_on_after_the_restart(
    db_url: str, tmp_path: Path
) -> None:
    """The SDK's own reconnect (``Location`` + ``Last-Event-ID``, its backoff) reaches the
    restarted server, which took the run over; the client just goes on."""
    server, url = start_server(db_url, tmp_path / "s1.log")
    port = int(url.rsplit(":", 1)[1])
    restarted = None
    client = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        follower = follow_slow(client, thread, steps=8, delay=0.25)
        seen, task = follower.seen, follower.task
        assert task is not None

        def two_updates() -> bool:
            assert not task.done(), task
            return sum(p.event == "updates" for p in seen) >= 2

        await eventually(two_updates, what="two updates streamed")
        kill(server, signal.SIGKILL)
        before = len(seen)
        restarted, _ = start_server(db_url, tmp_path / "s2.log", port=port)
        await asyncio.wait_for(task, 60)
        assert len(seen) > before
        run_id = follower.run_id
        whole = [p async for p in client.runs.join_stream(thread, run_id, last_event_id="-1")]
        assert [(p.event, p.id, p.data) for p in seen[1:]] == [
            (p.event, p.id, p.data) for p in whole[1:]
        ]
        assert seen[-1].event == "end" and whole[-2].data["done"] == list(range(8))
        assert (await client.runs.get(thread, run_id))["status"] == "success"
        async with httpx.AsyncClient(base_url=url) as http:
            native = (await http.get(f"/v1/runs/{run_id}")).json()
        # taken over from its last checkpoint, after steps saved: no attempt spent
        assert native["attempts"] == 1
        assert whole[0].data["attempt"] == 1
    finally:
        await client.aclose()
        kill(server, signal.SIGKILL)
        if restarted is not None:
            kill(restarted, signal.SIGTERM)
