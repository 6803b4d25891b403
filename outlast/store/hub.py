"""In-process fan-out of store notifications.

Postgres delivers ``NOTIFY`` to one listening connection per process, which publishes
here; SQLite publishes here directly after each commit. Readers (SSE streams, the
worker's claim loop, ``?wait=`` on results) wait on an ``asyncio.Event`` and then read
the table: a notification only says "look again", it never carries the data. Because
readers clear their event *before* reading, a notification that lands between the read
and the wait is never lost.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

QUEUE = "queue"
EVENTS = "events"
CONTROL = "control"
STATUS = "status"
WAITS = "waits"
ANY = "*"


class Hub:
    def __init__(self) -> None:
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = defaultdict(set)
        self._callbacks: dict[str, list[Callable[[str], None]]] = defaultdict(list)

    def publish(self, channel: str, key: str = ANY) -> None:
        for k in {(channel, key), (channel, ANY)}:
            for event in self._waiters.get(k, ()):
                event.set()
        for callback in list(self._callbacks.get(channel, ())):
            callback(key)

    def wake_all(self) -> None:
        """After a listener reconnect notifications may have been lost: everyone re-reads."""
        for events in self._waiters.values():
            for event in events:
                event.set()
        for callbacks in list(self._callbacks.values()):
            for callback in list(callbacks):
                callback(ANY)

    @contextmanager
    def watch(self, channel: str, key: str = ANY) -> Iterator[asyncio.Event]:
        event = asyncio.Event()
        self._waiters[(channel, key)].add(event)
        try:
            yield event
        finally:
            waiters = self._waiters.get((channel, key))
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[(channel, key)]

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], None]:
        self._callbacks[channel].append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks[channel]:
                self._callbacks[channel].remove(callback)

        return unsubscribe

    def watcher_count(self) -> int:
        return sum(len(v) for v in self._waiters.values())


async def wait_for(event: asyncio.Event, timeout: float) -> bool:  # noqa: ASYNC109
    """Wait for ``event`` at most ``timeout`` seconds; True if it was set.

    ``asyncio.timeout`` rather than ``asyncio.wait_for``: on Python 3.11, ``wait_for``
    swallows a cancellation that arrives as the event is set, and a task looping on it
    then never stops (seen as a worker that would not exit after SIGTERM)."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True
