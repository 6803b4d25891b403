"""The LISTEN connections of a process, feeding the in-process hub.

Clients never get a database connection each: however many SSE streams a process
serves, it listens once. The connections are dedicated (not from the pool) and direct:
``LISTEN`` does not survive a transaction-pooling PgBouncer. When one drops, it reconnects
with backoff and wakes the readers of its channels, because notifications sent meanwhile
are lost and readers must look at the tables again.

Two connections, because one channel is not like the others. Queue, status, control and
waits notifications are few per run and some reader in every process wants them (a worker
claims, a ``runs.wait`` ends). ``outlast_events`` is sent at every step of every run, and
only an SSE stream reads it: a listening backend is signalled and reads the notification
queue, and the process wakes to parse the payload, for every step of every run on the
database, followed or not. So the events connection is open only while a stream of this
process follows a run (or something subscribed to the channel), and for ``linger`` seconds
after the last one ends (streams come and go in bursts; a connection costs a round trip or
three to open). When it starts listening it wakes every stream, which reads the table
again: a step written before the ``LISTEN`` took hold is read, not missed.

A listening connection only receives, so it cannot tell a quiet database from a dead
link. TCP keepalives (``pg_conninfo.py``) find a dead peer, but only the peer of the TCP
connection: a proxy or load balancer in the path answers them for a backend that is gone.
So a connection that heard nothing for half of ``dead_peer_timeout`` sends a round trip,
which must answer within the other half: a link that went dead is noticed within
``dead_peer_timeout`` either way, then the connection is remade and its readers woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

import psycopg

from outlast.cancelling import cancel_and_wait
from outlast.retry import Backoff, RetryPolicy
from outlast.store.hub import (
    CONTROL,
    CRONS,
    EVENTS,
    QUEUE,
    STATUS,
    THREADS,
    WAITS,
    WEBHOOKS,
    Hub,
)
from outlast.store.pg_conninfo import DEAD_PEER_TIMEOUT, bounded

log = logging.getLogger(__name__)

RECONNECT = RetryPolicy(initial_interval=0.1, maximum_interval=5.0)

CHANNELS = {
    "outlast_queue": QUEUE,
    "outlast_events": EVENTS,
    "outlast_control": CONTROL,
    "outlast_status": STATUS,
    "outlast_waits": WAITS,
    "outlast_webhooks": WEBHOOKS,
    "outlast_crons": CRONS,
    "outlast_threads": THREADS,
}
EVENTS_CHANNEL = "outlast_events"
ALWAYS = tuple(c for c in CHANNELS if c != EVENTS_CHANNEL)


class Listener:
    def __init__(
        self,
        url: str,
        hub: Hub,
        *,
        linger: float = 30.0,
        dead_peer_timeout: float = DEAD_PEER_TIMEOUT,
    ) -> None:
        self._conninfo = bounded(url, dead_peer_timeout)
        self._check_after = dead_peer_timeout / 2  # of silence, then a round trip
        self._check_within = dead_peer_timeout / 2  # or the link is taken for dead
        self._hub = hub
        self.linger = linger
        self._task: asyncio.Task[None] | None = None
        self._events: asyncio.Task[None] | None = None
        self._retire: asyncio.TimerHandle | None = None
        self._ready = asyncio.Event()
        self._stopped = False
        self._unhook: Callable[[], None] = lambda: None

    @property
    def following_events(self) -> bool:
        """The events connection is open or opening (for tests and the bench)."""
        return self._events is not None

    async def start(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        self._task = asyncio.create_task(
            self._listen(ALWAYS, self._ready.set), name="outlast-pg-listener"
        )
        self._unhook = self._hub.on_interest(EVENTS, self._interest)
        async with asyncio.timeout(timeout):
            await self._ready.wait()

    async def stop(self) -> None:
        self._stopped = True
        self._unhook()
        self._unhook = lambda: None  # stopping twice is harmless
        if self._retire is not None:
            self._retire.cancel()
        for task in (self._task, self._events):
            if task is not None:
                await cancel_and_wait(task)
        self._task = self._events = None

    def _interest(self, watched: bool) -> None:
        """The hub's EVENTS watchers went from none to some (True) or back (False)."""
        if self._retire is not None:
            self._retire.cancel()
            self._retire = None
        if self._stopped:
            return
        if watched and self._events is None:
            self._events = asyncio.create_task(
                self._listen((EVENTS_CHANNEL,), lambda: None), name="outlast-pg-events"
            )
        elif not watched and self._events is not None:
            self._retire = asyncio.get_running_loop().call_later(self.linger, self._close_events)

    def _close_events(self) -> None:
        self._retire = None
        if self._events is not None:
            self._events.cancel()
            self._events = None

    async def _listen(self, channels: tuple[str, ...], on_ready: Callable[[], None]) -> None:
        backoff = Backoff(RECONNECT)
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True
                ) as conn:
                    for channel in channels:
                        await conn.execute(f"LISTEN {channel}")
                    on_ready()
                    for channel in channels:
                        self._hub.wake(CHANNELS[channel])
                    backoff.reset()
                    await self._receive(conn)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # connection lost: retry, never crash the process
                delay = backoff.next()
                log.warning("outlast listener disconnected (%s); retrying in %.1fs", exc, delay)
            else:
                delay = backoff.next()
            await asyncio.sleep(delay)

    async def _receive(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Dispatches notifications until the connection fails, and checks it after each
        silence of ``_check_after`` seconds. (Notifications that arrive during the check
        wait in psycopg's backlog for the next ``notifies()``.)"""
        while True:
            heard = False
            async for note in conn.notifies(timeout=self._check_after):
                heard = True
                self._dispatch(note.channel, note.payload)
            if not heard:
                await self._check(conn)

    async def _check(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """A round trip that fails within ``_check_within`` seconds. Not by cancelling
        the statement: psycopg would then try to cancel it on the server too, over the
        same dead link, for up to 10 seconds more. The socket is shut down instead, and
        the statement fails at once."""
        loop = asyncio.get_running_loop()
        late = loop.call_later(self._check_within, _shut_down, conn.pgconn.socket)
        try:
            await conn.execute("SELECT 1")
        except psycopg.OperationalError as exc:
            if loop.time() < late.when():  # failed by itself, not shut down
                raise
            raise psycopg.OperationalError(
                f"no answer to a health check within {self._check_within:g}s"
            ) from exc
        finally:
            late.cancel()

    def _dispatch(self, channel: str, payload: str) -> None:
        hub_channel = CHANNELS.get(channel)
        if hub_channel is None:
            return
        key = payload.split(":", 1)[0] if hub_channel == EVENTS else (payload or "*")
        self._hub.publish(hub_channel, key)


def _shut_down(fd: int) -> None:
    """Ends a socket that libpq still owns (a duplicate descriptor is closed, not its
    own): its pending reads and writes fail at once, as on a reset."""
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as sock:
        sock.shutdown(socket.SHUT_RDWR)
