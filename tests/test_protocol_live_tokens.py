"""Model tokens reach a protocol v2 thread stream (SSE and WebSocket) as the model makes
them, not a flush interval later, and a client that comes back with the ``seq`` of any
event it saw (a live token's included) gets each token exactly once, in order.

A real ``outlast serve`` (its embedded worker runs the graph, so the stream gets the chunks
live) with ``OUTLAST_MESSAGE_FLUSH_INTERVAL`` of an hour: the log gets the reply only once
the model says it is whole. ``lg_gated``'s model makes chunk k+1 only once the client has
seen chunk k, so a stream that waited for the log would never see chunk 0 and the run would
never end.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from websockets.asyncio.client import connect

from tests.browser import CutProxy
from tests.harness import eventually, sse_events
from tests.lg_util import ended, protocol_frames
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

WORDS = 6
REPLY = " ".join(f"t{i}" for i in range(WORDS))
CHUNKS = re.split(r"(\s)", REPLY)  # how the fake model streams it
HOUR = {"OUTLAST_MESSAGE_FLUSH_INTERVAL": "3600"}
CHANNELS = ["messages", "lifecycle", "updates"]
QUICK = 8.0  # seconds: a stream that waited for the log would wait an hour


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[str]:
    proc, url = start_server(db_url, tmp_path / "server.log", **HOUR)
    try:
        yield url
    finally:
        kill(proc, signal.SIGTERM)


async def _start(url: str, gate: Path) -> str:
    """A thread with ``lg_gated`` running on it; its id."""
    client = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        await client.runs.create(
            thread,
            "lg_gated",
            input={"messages": [{"role": "user", "content": "hi"}]},
            config={"configurable": {"gate": str(gate), "words": WORDS}},
        )
        return str(thread)
    finally:
        await client.aclose()


def _text(frame: dict[str, Any]) -> str | None:
    """The text a ``content-block-delta`` frame adds (None for any other frame)."""
    data = frame.get("params", {}).get("data", {})
    if frame.get("method") != "messages" or data.get("event") != "content-block-delta":
        return None
    return str(data["delta"]["text"])


class Gate:
    """Opens the model's gate for chunk k+1 as the client sees chunk k, but not after
    ``hold`` chunks."""

    def __init__(self, folder: Path, hold: int = -1) -> None:
        self.folder, self.hold, self.seen = folder, hold, 0

    def saw(self, frame: dict[str, Any]) -> bool:
        """The frame read; False once the gate is held."""
        if _text(frame) is None:
            return True
        self.seen += 1
        if self.seen == self.hold:
            return False
        (self.folder / f"go-{self.seen - 1}").touch()
        return True


async def _sse(url: str, thread: str, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """The stream's frames, read with the tests' SSE parser."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as http,
        http.stream("POST", f"/threads/{thread}/stream/events", json=body) as response,
    ):
        assert response.status_code == 200, await response.aread()
        async for event in sse_events(response):
            frame: dict[str, Any] = event.data
            assert event.id == str(frame["seq"])  # Last-Event-ID is the cursor
            yield frame


def _check(frames: list[dict[str, Any]]) -> None:
    """Every chunk on its own, in order, once, then the message whole; seqs increasing."""
    texts = [t for f in frames if (t := _text(f)) is not None]
    assert texts == CHUNKS
    finished = [
        f["params"]["data"]["content"]["text"]
        for f in frames
        if f["method"] == "messages" and f["params"]["data"]["event"] == "content-block-finish"
    ]
    assert finished == [REPLY]
    seqs = [f["seq"] for f in frames]
    assert seqs == sorted(set(seqs))


async def test_each_token_reaches_an_sse_client_before_the_model_makes_the_next(
    server: str, tmp_path: Path
) -> None:
    thread = await _start(server, tmp_path)
    gate, frames = Gate(tmp_path), []

    async def read() -> None:
        async for frame in _sse(server, thread, {"channels": CHANNELS}):
            frames.append(frame)
            gate.saw(frame)
            if ended(frame):
                return

    await asyncio.wait_for(read(), QUICK)
    _check(frames)


async def test_each_token_reaches_a_websocket_client_before_the_model_makes_the_next(
    server: str, tmp_path: Path
) -> None:
    thread = await _start(server, tmp_path)
    gate, frames = Gate(tmp_path), []
    ws_url = server.replace("http", "ws", 1) + f"/threads/{thread}/stream/events"

    async def read() -> None:
        async with connect(ws_url) as socket:
            params = {"channels": CHANNELS}
            command = {"id": 1, "method": "subscription.subscribe", "params": params}
            await socket.send(json.dumps(command))
            assert json.loads(await socket.recv())["type"] == "success"
            while not frames or not ended(frames[-1]):
                frames.append(json.loads(await socket.recv()))
                gate.saw(frames[-1])

    await asyncio.wait_for(read(), QUICK)
    _check(frames)


async def test_a_client_cut_after_a_live_token_rejoins_with_its_seq_and_gets_the_rest_once(
    server: str, tmp_path: Path
) -> None:
    """The connection is reset by a proxy after chunk 3 (its cursor a live token's); the
    model makes chunk 4 while no client is connected; the client comes back with the
    ``seq`` of the last event it saw and gets chunk 4 and the rest, nothing again. Then,
    from the log alone, a rejoin from every event it saw gets exactly the rest."""
    thread = await _start(server, tmp_path)
    proxy = CutProxy(int(server.rsplit(":", 1)[1]))
    await proxy.start()
    via = f"http://127.0.0.1:{proxy.port}"
    gate, first = Gate(tmp_path, hold=4), []
    try:

        async def until_held() -> None:
            async for frame in _sse(via, thread, {"channels": CHANNELS}):
                first.append(frame)
                if not gate.saw(frame):
                    await proxy.cut()  # a reset under the client, mid-message
                    return

        await asyncio.wait_for(until_held(), QUICK)
        (tmp_path / "go-3").touch()  # chunk 4 is made with no client connected
        await eventually((tmp_path / "made-4").exists, what="chunk 4 made", timeout=QUICK)
        await proxy.restore()
        cursor = first[-1]["seq"]
        assert first[-1]["event_id"] != str(cursor)  # a live token's
        rest: list[dict[str, Any]] = []

        async def rejoin() -> None:
            async for frame in _sse(via, thread, {"channels": CHANNELS, "since": cursor}):
                rest.append(frame)
                gate.saw(frame)
                if ended(frame):
                    return

        gate.hold = -1
        await asyncio.wait_for(rejoin(), QUICK)
    finally:
        await proxy.close()
    seen = first + rest
    _check(seen)
    async with httpx.AsyncClient(base_url=server, timeout=30) as http:
        for i, frame in enumerate(seen[:-1]):
            after = await protocol_frames(
                http, thread, {"channels": CHANNELS, "since": frame["seq"]}
            )
            texts = [t for f in seen[: i + 1] + after if (t := _text(f)) is not None]
            assert "".join(texts) == REPLY, f"from {frame['event_id']}: {texts}"
            assert len({f["event_id"] for f in seen[: i + 1] + after}) == len(seen[: i + 1]) + len(
                after
            )
