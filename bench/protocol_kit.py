"""The client side of bench/protocol_v2.py: LangGraph's own protocol v2 transports
(``langgraph_sdk.stream.transport``: ``ProtocolSseTransport``, ``ProtocolWebSocketTransport``,
the code ``client.threads.stream(..., transport=...)`` runs on), one subscription each,
every frame kept with the time it reached this process, and the three scenarios.

Why the transports and not ``AsyncThreadStream`` itself: the thread stream drops every
event whose ``event_id`` it saw before (its dedup) and reconnects by itself, which would
hide exactly what the resume measurement counts (events sent again) and when the cut
happens. The transports are the SDK's wire code: the same request body (``channels``,
``since``), the same SSE parser, the same WebSocket ``subscription.subscribe`` envelope.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from typing import Any, cast

import httpx
from langgraph_sdk.stream.transport.http import ProtocolSseTransport
from langgraph_sdk.stream.transport.ws import ProtocolWebSocketTransport

Frame = dict[str, Any]
Transport = ProtocolSseTransport | ProtocolWebSocketTransport
TRANSPORTS = ("sse", "websocket")
# what the SDK's ``thread.events`` asks for (every channel both servers know)
CHANNELS = ["values", "updates", "messages", "tools", "custom", "lifecycle", "input", "tasks"]
FANOUT_CHANNELS = ["custom", "lifecycle"]


def transport(http: httpx.AsyncClient, kind: str, thread_id: str) -> Transport:
    if kind == "sse":
        return ProtocolSseTransport(client=http, thread_id=thread_id)
    return ProtocolWebSocketTransport(client=http, thread_id=thread_id)


def start_command(count: int, interval: float, tag: str) -> dict[str, Any]:
    config = {"configurable": {"count": count, "interval": interval, "tag": tag}}
    params = {"assistant_id": "ticker", "input": {}, "config": config}
    return {"id": 1, "method": "run.start", "params": params}


def is_event(frame: Frame) -> bool:
    return frame.get("type") == "event"


def is_custom(frame: Frame) -> bool:
    return is_event(frame) and frame.get("method") == "custom"


def is_end(frame: Frame) -> bool:
    """The root's ``completed`` or ``failed``: the end of a run for the protocol's clients."""
    params = frame.get("params") or {}
    data = params.get("data") or {}
    return (
        frame.get("method") == "lifecycle"
        and params.get("namespace") == []
        and data.get("event") in ("completed", "failed")
    )


class Reader:
    """One subscription: every frame with ``time.time()`` when this process took it from
    the transport's queue (what an application reading the stream would see)."""

    def __init__(self, tr: Transport, kind: str, params: dict[str, Any]) -> None:
        self.kind = kind
        self.handle = tr.open_event_stream(params)
        self.frames: list[tuple[float, Frame]] = []
        self.ended = False
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for frame in self.handle.events:
                self.frames.append((time.time(), cast(Frame, frame)))
                self._changed.set()
        finally:
            self.ended = True
            self._changed.set()

    async def live(self, limit: float = 30.0) -> None:
        """Subscribed: the SSE response's headers came, or the WebSocket's subscribe was
        answered (the SDK sends it and counts the socket ready without waiting)."""
        await asyncio.wait_for(asyncio.shield(self.handle.ready), limit)
        if self.kind == "websocket":
            await self.until(lambda f: f.get("type") == "success", limit)

    async def until(
        self, wanted: Callable[[Frame], bool], limit: float, start: int = 0
    ) -> tuple[float, Frame]:
        """The first frame from index ``start`` on that ``wanted`` accepts, when it comes."""
        i = start
        async with asyncio.timeout(limit):
            while True:
                while i < len(self.frames):
                    if wanted(self.frames[i][1]):
                        return self.frames[i]
                    i += 1
                if self.ended:
                    done = self.handle.done.result() if self.handle.done.done() else None
                    raise RuntimeError(f"the stream ended ({done!r}) before the frame")
                self._changed.clear()
                await self._changed.wait()

    def events(self) -> list[Frame]:
        return [f for _, f in self.frames if is_event(f)]

    def cursor(self) -> int | None:
        seqs = [f["seq"] for f in self.events() if isinstance(f.get("seq"), int)]
        return max(seqs) if seqs else None

    async def close(self) -> None:
        """Drops the connection, as a client whose network went away (no goodbye)."""
        await self.handle.close()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task


def nth_custom(n: int) -> Callable[[Frame], bool]:
    seen = {"count": 0}

    def wanted(frame: Frame) -> bool:
        if is_custom(frame):
            seen["count"] += 1
        return seen["count"] >= n

    return wanted


# -- 1. the first event after run.start --------------------------------------------------


async def first_event(http: httpx.AsyncClient, sdk: Any, kind: str) -> dict[str, Any]:
    """A fresh thread, a subscription to it, then ``run.start`` after a random pause:
    milliseconds until the command's answer, the run's first event and its first custom
    event (the node's first output) reached this process."""
    thread = (await sdk.threads.create())["thread_id"]
    tr = transport(http, kind, thread)
    reader = Reader(tr, kind, {"channels": CHANNELS})
    try:
        await reader.live()
        # At least the time for the subscription to be in place on the server, and a random
        # phase against any poll the server runs (both have one when idle).
        await asyncio.sleep(random.uniform(0.2, 0.7))
        sent = time.time()
        await tr.send_command(start_command(3, 0.02, "first"))
        answered = time.time()
        first, frame = await reader.until(is_event, 60)
        method = str(frame.get("method"))
        custom, _ = await reader.until(is_custom, 60)
        await reader.until(is_end, 60)
    finally:
        await reader.close()
        await tr.close()
    return {
        "answer_ms": 1000 * (answered - sent),
        "first_ms": 1000 * (first - sent),
        "first_custom_ms": 1000 * (custom - sent),
        "first_method": method,
    }


# -- 2. a resume after a cut -------------------------------------------------------------


def compare(
    before: list[Frame], after: list[Frame], cursor: int, whole: list[Frame]
) -> dict[str, Any]:
    """What the client got across the cut against a full read of the thread at the end."""
    ids_before = {f["event_id"] for f in before}
    resent = [f for f in after if f["seq"] <= cursor or f["event_id"] in ids_before]
    got = ids_before | {f["event_id"] for f in after}
    full = {f["event_id"] for f in whole}
    return {
        "before_cut": len(before),
        "after_cut": len(after),
        "full_read": len(whole),
        "resent": len(resent),
        "missing": len(full - got),
        "unknown": len(got - full),
        "exact": not resent and got == full,
    }


async def full_read(tr: Transport, kind: str) -> list[Frame]:
    """Everything the thread's stream holds, from ``since=0``, up to the run's end."""
    reader = Reader(tr, kind, {"channels": CHANNELS, "since": 0})
    try:
        await reader.live()
        await reader.until(is_end, 60)
        await asyncio.sleep(0.2)  # anything after the end would show here
        return reader.events()
    finally:
        await reader.close()


async def cut_resume(
    http: httpx.AsyncClient, sdk: Any, kind: str, count: int, interval: float, cut_after: int
) -> dict[str, Any]:
    """Subscribe, start the run, drop the connection after ``cut_after`` custom events,
    stay away a few events' time, come back with ``since`` = the last ``seq`` seen."""
    thread = (await sdk.threads.create())["thread_id"]
    tr = transport(http, kind, thread)
    try:
        first = Reader(tr, kind, {"channels": CHANNELS})
        await first.live()
        await tr.send_command(start_command(count, interval, "cut"))
        await first.until(nth_custom(cut_after), 60)
        await first.close()
        before, cursor = first.events(), first.cursor()
        assert cursor is not None
        await asyncio.sleep(3 * interval)  # events the client is not there for
        second = Reader(tr, kind, {"channels": CHANNELS, "since": cursor})
        await second.live()
        await second.until(is_end, 60)
        await second.close()
        return compare(before, second.events(), cursor, await full_read(tr, kind))
    finally:
        await tr.close()


async def reconnect(tr: Transport, kind: str, cursor: int, limit: float) -> Reader:
    """The client coming back with its cursor, again and again until a server answers (the
    SDK's thread stream retries the same way, with backoff)."""
    deadline = time.monotonic() + limit
    while True:
        reader = Reader(tr, kind, {"channels": CHANNELS, "since": cursor})
        try:
            await reader.live(5)
            return reader
        except Exception:
            await reader.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


# -- 3. many subscribers on one thread ---------------------------------------------------


async def fanout(
    http: httpx.AsyncClient, sdk: Any, kind: str, n: int, count: int, interval: float
) -> dict[str, Any]:
    """``n`` subscriptions to one thread; a first short run proves each one live (its end
    reached every subscriber), then the measured run emits ``count`` custom events. Per
    delivery: receipt minus the node's own emit time (one host, one clock), and receipt
    minus the first subscriber's receipt of the same event (the spread)."""
    thread = (await sdk.threads.create())["thread_id"]
    tr = transport(http, kind, thread)
    subs: list[Reader] = []
    try:
        for k in range(0, n, 100):  # opened in batches, as a crowd of browsers would
            batch = [
                Reader(tr, kind, {"channels": FANOUT_CHANNELS}) for _ in range(k, min(n, k + 100))
            ]
            subs += batch
            await asyncio.gather(*(s.live(60) for s in batch))
        attach = 60 + 0.05 * n
        await tr.send_command(start_command(1, 0.0, "primer"))
        await asyncio.gather(*(s.until(is_end, attach) for s in subs))
        marks = [len(s.frames) for s in subs]
        await tr.send_command(start_command(count, interval, "measured"))
        budget = 60 + count * interval + 0.05 * n
        await asyncio.gather(
            *(s.until(is_end, budget, m) for s, m in zip(subs, marks, strict=True))
        )
    finally:
        await asyncio.gather(*(s.close() for s in subs))
        await tr.close()
    return deliveries(subs, marks, count)


STEADY_AFTER = 0.6  # seconds into the run: past any poll the server runs at a run's start


def deliveries(subs: list[Reader], marks: list[int], count: int) -> dict[str, Any]:
    """Per delivery, emit → receipt (all, and the steady part: events emitted
    ``STEADY_AFTER`` s or more after the run's first), and the spread between subscribers."""
    emit: list[float] = []
    steady: list[float] = []
    began: float | None = None
    arrivals: dict[int, list[float]] = {}
    short = 0
    for sub, mark in zip(subs, marks, strict=True):
        got = 0
        for received, frame in sub.frames[mark:]:
            data = (frame.get("params") or {}).get("data") or {}
            if is_custom(frame) and data.get("tag") == "measured":
                if data["i"] == 0:
                    began = data["t"]
                emit.append(1000 * (received - data["t"]))
                if began is not None and data["t"] - began >= STEADY_AFTER:
                    steady.append(emit[-1])
                arrivals.setdefault(data["i"], []).append(received)
                got += 1
        short += got < count
    spread = [1000 * (t - min(ts)) for ts in arrivals.values() for t in ts]
    return {"emit_ms": emit, "steady_ms": steady, "spread_ms": spread, "subscribers_short": short}
