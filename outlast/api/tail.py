"""One reader per run, however many streams follow it in this process.

A hundred clients watching one run are woken together by each new event; if each of them
queried the database, one event would cost a hundred identical queries (and the pool's
queue behind them). The streams of a run share a ``Tail``: the newest events, read once
under a lock and handed to every stream whose cursor is inside it. A stream far behind
(a replay from an old cursor) reads the database directly and joins the tail when it
catches up. Events are immutable once written, so a cached event is never stale.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

from outlast.store import Event, EventStore

KEEP = 1000  # events kept per followed run: several seconds of the busiest run


class Tail:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.lock = asyncio.Lock()
        self.followers = 0
        # each event's SSE frame, encoded once for all the streams that send it (a
        # hundred clients used to serialize the same event a hundred times)
        self._frames: dict[int, bytes] = {}

    def frame(self, event: Event, encode: Callable[[Event], bytes]) -> bytes:
        cached = self._frames.get(event.seq)
        if cached is None:
            cached = encode(event)
            if self.events and event.seq >= self.events[0].seq:
                self._frames[event.seq] = cached  # a replay's old events are not kept
        return cached

    async def read(self, store: EventStore, run_id: str, cursor: int, limit: int) -> list[Event]:
        if self.events and cursor < self.events[0].seq - 1:
            return await store.read_events(run_id, cursor, limit)  # behind: a replay
        async with self.lock:
            cached = [e for e in self.events if e.seq > cursor][:limit]
            if cached:
                return cached
            fresh = await store.read_events(run_id, cursor, limit)
            if fresh and (not self.events or fresh[0].seq == self.events[-1].seq + 1):
                self.events.extend(fresh)
            elif fresh:
                self.events = list(fresh)  # not contiguous with the cache: start over
            del self.events[:-KEEP]
            if len(self._frames) > KEEP:
                oldest = self.events[0].seq
                self._frames = {k: v for k, v in self._frames.items() if k >= oldest}
            return fresh


_tails: dict[str, Tail] = {}


@contextlib.contextmanager
def following(run_id: str) -> Iterator[Tail]:
    """The run's shared tail for as long as this stream follows it."""
    tail = _tails.setdefault(run_id, Tail())
    tail.followers += 1
    try:
        yield tail
    finally:
        tail.followers -= 1
        if tail.followers == 0 and _tails.get(run_id) is tail:
            del _tails[run_id]


def frame_of(event: Event, encode: Callable[[Event], bytes]) -> bytes:
    """The event's frame, encoded once per process while its run is followed here."""
    tail = _tails.get(event.run_id)
    return tail.frame(event, encode) if tail is not None else encode(event)
