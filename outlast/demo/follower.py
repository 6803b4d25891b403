"""The demo's stream client: follows a run's events the way a careful client should.

It remembers the last ``seq`` it saw and, when its connection ends (closed on purpose,
or cut because the server died), reconnects with ``Last-Event-ID`` and keeps going.
Every event it receives is kept in order, so the demo can check afterwards that the
three connections together saw each event exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from outlast.client.sse import parse
from outlast.retry import Backoff, RetryPolicy

# A steady 0.3 s: the demo kills its server on purpose and shows the reconnection at once.
RECONNECT = RetryPolicy(initial_interval=0.3, backoff_coefficient=1.0)


@dataclass
class Received:
    seq: int
    type: str
    data: dict[str, Any]
    connection: int


@dataclass
class Follower:
    client: httpx.AsyncClient
    run_id: str
    on_event: Callable[[Received], None] = lambda event: None
    events: list[Received] = field(default_factory=list)
    connections: int = 0
    drops: list[str] = field(default_factory=list)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def last_seq(self) -> int:
        return self.events[-1].seq if self.events else 0

    async def read(self, *, until: Callable[[Received], bool] | None = None) -> None:
        """One connection: from after ``last_seq`` until the run ends, ``until`` says
        stop (then the connection is closed by us), or the connection fails."""
        headers = {"Last-Event-ID": str(self.last_seq)} if self.events else {}
        url = f"/v1/runs/{self.run_id}/events"
        async with self.client.stream("GET", url, headers=headers, timeout=None) as response:
            response.raise_for_status()
            self.connections += 1  # counted once it is open: failed attempts are not
            number = self.connections
            async for sse in parse(response.aiter_lines()):
                if sse.seq is None:
                    continue  # an announcement outside the log (a snapshot)
                event = Received(sse.seq, sse.type, sse.data, number)
                self.events.append(event)
                self.on_event(event)
                if sse.terminal:
                    self.ended.set()
                async with self._arrived:
                    self._arrived.notify_all()
                if sse.terminal:
                    return
                if until is not None and until(event):
                    return

    async def follow(self, retry: RetryPolicy = RECONNECT, give_up: float = 30.0) -> None:
        """Read to the end, reconnecting after every failure (a dead server included)."""
        backoff = Backoff(retry)
        failing_since: float | None = None
        loop = asyncio.get_running_loop()
        while not self.ended.is_set():
            try:
                await self.read()
                failing_since = None
                backoff.reset()
            except (httpx.HTTPError, OSError) as exc:
                now = loop.time()
                if failing_since is None:
                    failing_since = now
                    self.drops.append(type(exc).__name__)
                elif now - failing_since > give_up:
                    raise
                await asyncio.sleep(backoff.next())

    async def wait_for(self, test: Callable[[Received], bool], within: float) -> Received:
        """The first event (already received or still to come) that passes ``test``."""
        async with asyncio.timeout(within), self._arrived:
            while True:
                for event in self.events:
                    if test(event):
                        return event
                if self.ended.is_set():
                    raise LookupError("the run ended first")
                await self._arrived.wait()
