"""The event stream of a run: replay from a cursor, then the live tail, as SSE.

The stream is a view, never the work: closing it changes nothing about the run. Every
event goes out with ``id: <seq>``, so a client (``EventSource`` does this by itself)
reconnects with ``Last-Event-ID`` and gets exactly what it missed. The seam between
replay and live tail has no gap and no duplicate because there is only one loop: clear
the wake-up flag, read everything after the cursor from the table, send it, wait.

If the client's cursor predates what retention kept, the stream says so: a ``gap``
event (whose id moves the cursor past the hole) and a ``snapshot`` of the run, then the
retained events. It never pretends the log is continuous.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import anyio
from fastapi import Depends, Header, Query
from sse_starlette import ServerSentEvent

from outlast.api.context import AppContext
from outlast.api.schemas import RunSnapshot
from outlast.api.tail import following, frame_of
from outlast.errors import InvalidCursor, LimitReached
from outlast.runtime import live, metrics
from outlast.store import Event, EventStore, Run, RunStore, WaitStore
from outlast.store.hub import EVENTS, wait_for
from outlast.vocabulary import Frame, RunStatus, WaitStatus

PAGE = 500
# A lost notification (listener reconnect) delays delivery at most this long.
SAFETY_REREAD = 5.0
RETRY_MS = 2000


# The cursor as the document declares it (``after``, ``Last-Event-ID``): what
# ``parse_cursor`` takes; anything else is a 400.
CURSOR: dict[str, Any] = {"json_schema_extra": {"pattern": r"^(\s*[0-9]{1,18}\s*)?$"}}


def parse_cursor(last_event_id: str | None, after: str | None) -> int:
    """``Last-Event-ID`` wins over ``?after=``: a reconnecting EventSource keeps the URL it
    started with but sends the header with the last id it received."""
    raw = last_event_id if last_event_id not in (None, "") else after
    if raw is None or raw == "":
        return 0
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidCursor(f"event cursor must be a non-negative integer seq, got {raw[:40]!r}")
    return int(raw)


async def _cursor(  # a coroutine: FastAPI runs a plain function in a thread
    after: Annotated[str | None, Query(description="resume after this seq", **CURSOR)] = None,
    last_event_id: Annotated[str | None, Header(**CURSOR)] = None,
) -> int:
    return parse_cursor(last_event_id, after)


# Where a stream starts: the seq after which it sends events.
Cursor = Annotated[int, Depends(_cursor)]


def _envelope(seq: int | None, type_: str, time_: str, run_id: str, data: Any) -> str:
    body = {"seq": seq, "type": type_, "time": time_, "run_id": run_id, "data": data}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def encoded(event: Event) -> bytes:
    return wire(event).encode()


def wire(event: Event) -> ServerSentEvent:
    payload: dict[str, Any] = {
        "seq": event.seq,
        "type": event.type,
        "time": event.time.isoformat(),
        "run_id": event.run_id,
        "data": event.data,
    }
    return ServerSentEvent(
        data=json.dumps(payload, separators=(",", ":"), ensure_ascii=False),
        event=event.type,
        id=str(event.seq),
    )


class LogStore(RunStore, EventStore, Protocol):
    """What following a run's log reads: the run and its events."""


class StreamStore(LogStore, WaitStore, Protocol):
    """What a stream reads: the log, and the waits a gap's snapshot shows."""


async def stream(
    store: StreamStore,
    run_id: str,
    after: int,
    max_seconds: float,
    stopping: Callable[[], bool] = lambda: False,
) -> AsyncIterator[ServerSentEvent | bytes]:
    """The run's events as SSE frames (``bytes`` for log events, encoded once per process
    in the run's tail). ``stopping`` is asked each time the stream wakes between events:
    a shutdown ends it cleanly (the caller wakes it through the hub)."""
    # The gauge must come down however the stream ends: its end, an error, or the client
    # going away (the generator is then cancelled or closed); aclosing closes the inner one
    # at once rather than whenever it is collected.
    metrics.SSE_CLIENTS.inc()
    try:
        frames = _stream(store, run_id, after, max_seconds, stopping)
        async with contextlib.aclosing(frames) as events:
            async for item in events:
                yield item
    finally:
        metrics.SSE_CLIENTS.dec()


@dataclass(frozen=True, slots=True)
class Gap:
    """The cursor predates what retention kept: the log resumes after ``resume_at``."""

    requested_after: int
    oldest_available: int | None
    resume_at: int
    run: Run


@dataclass(slots=True)
class Follow:
    """What a follower learned on connecting: events up to ``connected_at`` are replay."""

    connected_at: int = 0


async def follow_log(
    store: LogStore,
    run_id: str,
    after: int,
    max_seconds: float,
    stopping: Callable[[], bool] = lambda: False,
    seen: Follow | None = None,
) -> AsyncGenerator[Event | Gap, None]:
    """The run's log after ``after``, then live, until the terminal event (or the
    transport clock, or a shutdown). Both faces stream from here: one loop, so the seam
    between replay and live tail has no gap and no duplicate (clear the wake-up flag,
    read everything after the cursor, send it, wait)."""
    items = follow_run(store, run_id, after, max_seconds, stopping, seen)
    async with contextlib.aclosing(items) as log:
        async for item in log:
            if not isinstance(item, live.Follower):
                yield item


class _Wake(asyncio.Event):
    """What a follower waits on: the hub sets it when the log has news (``news``), the
    run's producer in this process when it has live chunks (``live``)."""

    def __init__(self) -> None:
        super().__init__()
        self.news = True  # the first pass reads

    def set(self) -> None:
        self.news = True
        super().set()

    def live(self) -> None:
        super().set()


async def follow_run(
    store: LogStore,
    run_id: str,
    after: int,
    max_seconds: float,
    stopping: Callable[[], bool] = lambda: False,
    seen: Follow | None = None,
    chunks: live.Follower | None = None,
) -> AsyncGenerator[Event | Gap | live.Follower, None]:
    """``follow_log``, and ``chunks`` (itself) when the run's producer in this process
    handed it token chunks (``runtime.live``): a live chunk costs no read of the log."""
    deadline = time.monotonic() + max_seconds
    wake = _Wake()
    with store.hub.watch(EVENTS, run_id, wake), following(run_id) as tail:
        chunks = chunks if chunks is not None else live.Follower()  # a queue nobody fills
        chunks.notify = wake.live
        run = await store.get_run(run_id)
        if run is None or (run.terminal and after >= run.last_seq):
            return
        cursor = after
        if seen is not None:
            seen.connected_at = run.last_seq
        first = await store.first_retained_seq(run_id)
        resume_at = (first - 1) if first is not None else run.last_seq
        if cursor < resume_at:
            yield Gap(cursor, first, resume_at, run)
            cursor = resume_at
            if run.terminal and first is None:
                return  # everything, the terminal event included, was pruned
        while True:
            wake.clear()
            if wake.news:
                wake.news = False
                events = await tail.read(store, run_id, cursor, PAGE)
                for event in events:
                    yield event
                    cursor = event.seq
                    if event.terminal:
                        return
                if len(events) == PAGE:
                    wake.news = True
                    continue
            if chunks.chunks:
                yield chunks
                continue
            remaining = deadline - time.monotonic()
            # the transport clock ran out, or the server shuts down (asked before waiting
            # too: a wake-up published before this pass cleared `wake` would be lost until
            # the safety re-read): a clean end, the client resumes from its cursor
            if remaining <= 0 or stopping():
                return
            woken = await wait_for(wake, min(remaining, SAFETY_REREAD))
            if stopping():
                return
            if not woken:
                wake.news = True
                current = await store.get_run(run_id)
                if current is None or (current.terminal and cursor >= current.last_seq):
                    return


async def _stream(
    store: StreamStore, run_id: str, after: int, max_seconds: float, stopping: Callable[[], bool]
) -> AsyncGenerator[ServerSentEvent | bytes, None]:
    # How long a browser's EventSource waits before it reconnects by itself (with
    # Last-Event-ID); said once per connection, so clients can show when they try next.
    yield ServerSentEvent(retry=RETRY_MS)
    seen = Follow()
    log = follow_log(store, run_id, after, max_seconds, stopping, seen)
    async with contextlib.aclosing(log) as items:
        async for item in items:
            if isinstance(item, Gap):
                for frame in await _gap_frames(store, run_id, item):
                    yield frame
                continue
            yield frame_of(item, encoded)
            if item.seq <= seen.connected_at:
                metrics.SSE_REPLAYED.inc()


async def _gap_frames(store: WaitStore, run_id: str, gap: Gap) -> list[ServerSentEvent]:
    now = dt.datetime.now(dt.UTC).isoformat()
    data = {
        "requested_after": gap.requested_after,
        "oldest_available": gap.oldest_available,
        "reason": "events up to this point were pruned by retention",
    }
    metrics.SSE_GAPS.inc()
    run = gap.run
    waits = (
        await store.list_waits(run_id, WaitStatus.OPEN) if run.status == RunStatus.WAITING else []
    )
    snap = RunSnapshot.of(run, waits).model_dump(mode="json")
    # The gap's id (the last pruned seq) moves the client's cursor past the hole, so a
    # reconnect does not report the same gap again. The snapshot is not part of the log:
    # it has no id and no seq.
    return [
        ServerSentEvent(
            data=_envelope(gap.resume_at, Frame.GAP, now, run_id, data),
            event=Frame.GAP,
            id=str(gap.resume_at),
        ),
        ServerSentEvent(
            data=_envelope(None, Frame.SNAPSHOT, now, run_id, snap), event=Frame.SNAPSHOT
        ),
    ]


def counted(
    ctx: AppContext,
    run_id: str,
    events: AsyncIterator[ServerSentEvent | bytes],
    shutdown: anyio.Event,
) -> AsyncIterator[ServerSentEvent | bytes]:
    """Hold one of the principal's stream slots while ``events`` is being sent, and end
    the stream cleanly when the server shuts down (the client got a ``retry:`` hint and
    reconnects, to this server's successor or another). Checked before the response
    starts, so a refusal is an ordinary 429, not a broken stream.

    The shutdown is not raced against every event (a task and an ``asyncio.wait`` per
    event were a tenth of the API's CPU with 100 clients): the stream checks it between
    events, and one task per stream wakes it through the hub when the shutdown comes."""
    open_now = ctx.streams.get(ctx.principal, 0)
    if open_now >= ctx.settings.max_streams:
        raise LimitReached(
            f"{open_now} event streams open already (OUTLAST_MAX_STREAMS); close one",
            "max_streams",
            retry_after=2,
        )
    ctx.streams[ctx.principal] = open_now + 1

    def wake(_: object) -> None:
        if shutdown.is_set():
            ctx.store.hub.publish(EVENTS, run_id)

    async def held() -> AsyncIterator[ServerSentEvent | bytes]:
        waker = asyncio.ensure_future(shutdown.wait())
        waker.add_done_callback(wake)
        try:
            async for item in events:
                yield item
                if shutdown.is_set():
                    return
        finally:
            waker.cancel()
            ctx.streams[ctx.principal] -= 1
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    return held()
