"""A process listens to ``outlast_events`` only while one of its streams follows a run
(outlast/store/pg_listen.py); the other channels always."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from outlast.store.hub import EVENTS, STATUS, Hub
from outlast.store.pg_listen import Listener
from tests.harness import eventually


@pytest.fixture
async def listening(pg_url: str) -> AsyncIterator[tuple[Listener, Hub]]:
    hub = Hub()
    listener = Listener(pg_url, hub, linger=0.2)
    await listener.start()
    try:
        yield listener, hub
    finally:
        await listener.stop()


async def _notify(pg_url: str, *notes: tuple[str, str]) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for channel, payload in notes:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))


async def test_no_stream_no_events_delivered(
    listening: tuple[Listener, Hub], pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    listener, hub = listening
    received: list[str] = []
    dispatch = listener._dispatch

    def record(channel: str, payload: str) -> None:
        received.append(channel)
        dispatch(channel, payload)

    monkeypatch.setattr(listener, "_dispatch", record)
    seen: list[str] = []
    hub.subscribe(STATUS, seen.append)  # another channel's reader opens nothing
    await _notify(pg_url, ("outlast_events", "r1:2"), ("outlast_status", "r1"))
    await eventually(lambda: "r1" in seen, what="the status notification")
    assert not listener.following_events
    assert received == ["outlast_status"]


async def test_a_stream_opens_the_events_connection_and_is_woken_when_it_holds(
    listening: tuple[Listener, Hub], pg_url: str
) -> None:
    listener, hub = listening
    with hub.watch(EVENTS, "r1") as wake:
        assert listener.following_events
        # Woken once the LISTEN holds: what was written before it is read from the table.
        await eventually(wake.is_set, what="the wake-up once listening")
        wake.clear()
        await _notify(pg_url, ("outlast_events", "r1:3"))
        await eventually(wake.is_set, what="the step's notification")
    # The connection lingers a moment for the next stream, then closes.
    with hub.watch(EVENTS, "r2"):
        assert listener.following_events
    await eventually(lambda: not listener.following_events, what="the events connection closing")


async def test_a_stream_within_the_linger_keeps_the_connection(
    listening: tuple[Listener, Hub], pg_url: str
) -> None:
    listener, hub = listening
    listener.linger = 60.0
    with hub.watch(EVENTS, "r1") as wake:
        await eventually(wake.is_set, what="listening")
    events_task = listener._events
    with hub.watch(EVENTS, "r2") as wake:
        assert listener._events is events_task  # the same connection, not a new one
        await _notify(pg_url, ("outlast_events", "r2:1"))
        await eventually(wake.is_set, what="the notification on the kept connection")
