"""One LISTEN connection per process, feeding the in-process hub.

Clients never get a database connection each: however many SSE streams a process
serves, it listens once. The connection is dedicated (not from the pool) and direct:
``LISTEN`` does not survive a transaction-pooling PgBouncer. When it drops, it reconnects
with backoff and wakes every waiter, because notifications sent meanwhile are lost and
readers must look at the tables again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS, WAITS, Hub

log = logging.getLogger(__name__)

CHANNELS = {
    "outlast_queue": QUEUE,
    "outlast_events": EVENTS,
    "outlast_control": CONTROL,
    "outlast_status": STATUS,
    "outlast_waits": WAITS,
}


class Listener:
    def __init__(self, url: str, hub: Hub) -> None:
        self._url = url
        self._hub = hub
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self.connected = False

    async def start(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        self._task = asyncio.create_task(self._run(), name="outlast-pg-listener")
        async with asyncio.timeout(timeout):
            await self._ready.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        backoff = 0.1
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True
                ) as conn:
                    for channel in CHANNELS:
                        await conn.execute(f"LISTEN {channel}")
                    self.connected = True
                    self._ready.set()
                    self._hub.wake_all()
                    backoff = 0.1
                    async for note in conn.notifies():
                        self._dispatch(note.channel, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost: retry, never crash the process
                log.warning("outlast listener disconnected (%s); retrying in %.1fs", exc, backoff)
            self.connected = False
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 5.0)

    def _dispatch(self, channel: str, payload: str) -> None:
        hub_channel = CHANNELS.get(channel)
        if hub_channel is None:
            return
        key = payload.split(":", 1)[0] if hub_channel == EVENTS else (payload or "*")
        self._hub.publish(hub_channel, key)
