"""In-process fan-out of store notifications.

Postgres delivers ``NOTIFY`` to the listening connections of a process, which publish
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
from typing import Protocol

QUEUE = "queue"
EVENTS = "events"
CONTROL = "control"
STATUS = "status"
WAITS = "waits"
WEBHOOKS = "webhooks"  # deliveries were written (the outbox trigger's NOTIFY)
CRONS = "crons"  # a cron was made or changed: schedulers re-plan their nap
THREADS = "threads"  # a run was accepted on the thread (key): its idle streams look again
ANY = "*"


class Hub:
    def __init__(self) -> None:
        self._waiters: dict[tuple[str, str], set[asyncio.Event]] = defaultdict(set)
        self._callbacks: dict[str, list[Callable[[str], None]]] = defaultdict(list)
        self._watching: dict[str, int] = defaultdict(int)  # watchers per channel, any key
        self._interest: dict[str, list[Callable[[bool], None]]] = defaultdict(list)

    def publish(self, channel: str, key: str = ANY) -> None:
        for k in {(channel, key), (channel, ANY)}:
            for event in self._waiters.get(k, ()):
                event.set()
        for callback in list(self._callbacks.get(channel, ())):
            callback(key)

    def wake(self, channel: str) -> None:
        """Notifications of ``channel`` may have been lost (a listener connected or
        reconnected): every reader of it reads again."""
        for (ch, _), events in self._waiters.items():
            if ch == channel:
                for event in events:
                    event.set()
        for callback in list(self._callbacks.get(channel, ())):
            callback(ANY)

    def on_interest(self, channel: str, hook: Callable[[bool], None]) -> Callable[[], None]:
        """Call ``hook(True)`` when ``channel`` gets its first watcher or subscriber,
        ``hook(False)`` when it loses its last: a listener can listen only while someone
        reads."""
        self._interest[channel].append(hook)
        return lambda: self._interest[channel].remove(hook)

    @contextmanager
    def watch(
        self, channel: str, key: str = ANY, event: asyncio.Event | None = None
    ) -> Iterator[asyncio.Event]:
        """An event set at each notification of ``channel`` (and ``key``): a new one, or
        ``event`` (a reader that is also woken by something else: its own subclass)."""
        event = event if event is not None else asyncio.Event()
        self._waiters[(channel, key)].add(event)
        self._gain(channel)
        try:
            yield event
        finally:
            waiters = self._waiters.get((channel, key))
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[(channel, key)]
            self._lose(channel)

    def subscribe(self, channel: str, callback: Callable[[str], None]) -> Callable[[], None]:
        self._callbacks[channel].append(callback)
        self._gain(channel)

        def unsubscribe() -> None:
            if callback in self._callbacks[channel]:
                self._callbacks[channel].remove(callback)
                self._lose(channel)

        return unsubscribe

    def _gain(self, channel: str) -> None:
        self._watching[channel] += 1
        if self._watching[channel] == 1:
            for hook in list(self._interest.get(channel, ())):
                hook(True)

    def _lose(self, channel: str) -> None:
        self._watching[channel] -= 1
        if self._watching[channel] == 0:
            for hook in list(self._interest.get(channel, ())):
                hook(False)

    def watcher_count(self, channel: str | None = None, key: str = ANY) -> int:
        """How many wait here: in all, or on one channel and key."""
        if channel is None:
            return sum(len(v) for v in self._waiters.values())
        return len(self._waiters.get((channel, key), ()))


class Notifying(Protocol):
    """A part of the store whose writes notify: ``hub`` is where they are published, and
    where a component that follows them (a stream, a waker, the claim loop) subscribes."""

    hub: Hub


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
