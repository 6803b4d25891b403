"""Model tokens reach a LangGraph client as the model makes them, not a flush interval
later, and a client cut mid-message and reconnected sees each token exactly once.

A real ``outlast serve`` (its embedded worker runs the graph, so the stream gets the
chunks live), the real ``langgraph_sdk``, and ``OUTLAST_MESSAGE_FLUSH_INTERVAL`` of an
hour: the log gets the reply only once the model says it is whole. ``lg_gated``'s model
makes chunk k+1 only once the client has seen chunk k, so a stream that waited for the
log would never see chunk 0 and the run would never end.
"""

from __future__ import annotations

import asyncio
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.browser import CutProxy
from tests.harness import PATIENCE, eventually
from tests.lg_util import seq_of
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

WORDS = 6
REPLY = " ".join(f"t{i}" for i in range(WORDS))
CHUNKS = re.split(r"(\s)", REPLY)  # how the fake model streams it
HOUR = {"OUTLAST_MESSAGE_FLUSH_INTERVAL": "3600"}


class Follower:
    """A client streaming ``lg_gated``: it opens the model's gate for the next chunk as
    each chunk arrives, except after ``hold_after`` chunks (``held`` is set then)."""

    def __init__(self, client: Any, thread: str, gate: Path, hold_after: int = -1) -> None:
        self.parts: list[Any] = []
        self.texts: list[str] = []
        self.created: list[Any] = []
        self.held = asyncio.Event()
        self._client, self._thread, self._gate, self._hold = client, thread, gate, hold_after

    def open(self, k: int) -> None:
        (self._gate / f"go-{k}").touch()

    async def run(self) -> None:
        async for part in self._client.runs.stream(
            self._thread,
            "lg_gated",
            input={"messages": [{"role": "user", "content": "hi"}]},
            config={"configurable": {"gate": str(self._gate), "words": WORDS}},
            stream_mode=["messages-tuple", "values"],
            on_run_created=self.created.append,
        ):
            self.parts.append(part)
            if part.event == "messages":
                self.texts.append(part.data[0]["content"])
                if len(self.texts) == self._hold:
                    self.held.set()
                else:
                    self.open(len(self.texts) - 1)


def _final_reply(parts: list[Any]) -> str:
    values = [p.data for p in parts if p.event == "values"]
    return str(values[-1]["messages"][-1]["content"])


async def test_each_token_reaches_the_client_before_the_model_makes_the_next(
    db_url: str, tmp_path: Path
) -> None:
    server, url = start_server(db_url, tmp_path / "server.log", **HOUR)
    client = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        follower = Follower(client, thread, tmp_path)
        await asyncio.wait_for(follower.run(), PATIENCE)
        # every chunk on its own, in order, once: the coalesced event that reached the
        # log at the end added nothing the client had
        assert follower.texts == CHUNKS
        assert _final_reply(follower.parts) == "".join(follower.texts) == REPLY
        ids = [seq_of(p.id) for p in follower.parts[1:]]
        assert ids == sorted(ids)
        # the log has the reply coalesced: a replay gets it in one piece
        again = [
            p
            async for p in client.runs.join_stream(
                thread, follower.created[0]["run_id"], last_event_id="-1"
            )
        ]
        assert [p.data[0]["content"] for p in again if p.event == "messages"] == [REPLY]
    finally:
        await client.aclose()
        kill(server, signal.SIGTERM)


async def test_a_client_cut_mid_message_sees_each_token_once(db_url: str, tmp_path: Path) -> None:
    """The connection is reset by a proxy after chunk 3; the model makes chunk 4 while no
    client is connected; the SDK reconnects by itself with the last event id (a live
    chunk's) and gets chunk 4 and the rest, nothing again."""
    server, url = start_server(db_url, tmp_path / "server.log", **HOUR)
    proxy = CutProxy(int(url.rsplit(":", 1)[1]))
    await proxy.start()
    client = get_client(url=f"http://127.0.0.1:{proxy.port}")
    other = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        follower = Follower(client, thread, tmp_path, hold_after=4)
        task = asyncio.create_task(follower.run())
        await asyncio.wait_for(follower.held.wait(), PATIENCE)
        cut_at = follower.parts[-1].id
        await proxy.cut()
        follower.open(3)  # chunk 4 is made with no client connected
        run_id = follower.created[0]["run_id"]

        made = tmp_path / "made-4"
        await eventually(made.exists, what="chunk 4 made while the client is away")
        await proxy.restore()
        await asyncio.wait_for(task, PATIENCE)
        assert follower.texts == CHUNKS
        assert _final_reply(follower.parts) == "".join(follower.texts)
        # rejoining later from the cut: the log's coalesced reply without what the
        # client had
        rest = [
            p
            async for p in other.runs.join_stream(thread, run_id, last_event_id=cut_at)
            if p.event == "messages"
        ]
        assert "".join(CHUNKS[:4]) + "".join(p.data[0]["content"] for p in rest) == REPLY
        assert len(rest) == 1
    finally:
        await client.aclose()
        await other.aclose()
        await proxy.close()
        kill(server, signal.SIGTERM)
