"""What the contract modules share: a claimed run, the events a transition appended, and
the notifications it published.

A notification is how a write wakes its followers (SSE streams, the claim loop, result
waiters): SQLite publishes on the hub after commit, Postgres sends ``NOTIFY`` that the
process's listener publishes on the same hub. The suite subscribes to the hub, so it sees
both through one door and holds them to the same set.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from outlast.store import Event, Lease, NewRun, Run, Store
from outlast.store.hub import CONTROL, CRONS, EVENTS, QUEUE, STATUS, WAITS, wait_for
from outlast.store.postgres import PostgresStore
from outlast.vocabulary import EventType
from tests.util import new_run

CHANNELS = (QUEUE, EVENTS, CONTROL, STATUS, WAITS, CRONS)
MARKER = "marker-"  # the key of the notifications `Notes.take` sends itself
# The first event of every run: its type and payload keys.
CREATED = (EventType.RUN_CREATED, {"status", "graph", "thread_id"})
# Long enough for a loaded machine: a notification that does not come fails the test.
DEADLINE = 30.0


class Notes:
    """Every notification the store's hub delivers, as ``(channel, key)``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.seen: list[tuple[str, str]] = []
        self._off = [
            store.hub.subscribe(channel, lambda key, c=channel: self.seen.append((c, key)))
            for channel in CHANNELS
        ]

    def close(self) -> None:
        for off in self._off:
            off()

    async def take(self) -> set[tuple[str, str]]:
        """What was published since the last ``take``. Postgres delivers ``NOTIFY``
        asynchronously, in commit order, on each listening connection (run events come on
        one of their own): a marker sent on each after the write arrives after everything
        the write sent there, so waiting for the markers is waiting for all of them (and
        for none that were never sent). The first ``take`` also waits for the events
        connection, which opens once something subscribes, to be listening."""
        if isinstance(self.store, PostgresStore):
            marker = f"{MARKER}{uuid.uuid4()}"
            with (
                self.store.hub.watch(CONTROL, marker) as control,
                self.store.hub.watch(EVENTS, marker) as events,
            ):
                for arrived, channel, payload in (
                    (control, "outlast_control", marker),
                    (events, "outlast_events", f"{marker}:0"),
                ):
                    deadline = time.monotonic() + DEADLINE
                    while not arrived.is_set():  # resent: a first one may beat the LISTEN
                        assert time.monotonic() < deadline, f"the listener never saw {channel}"
                        async with self.store.pool.connection() as conn:
                            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
                        await wait_for(arrived, 0.5)
            # every marker, not only this take's: one resent by an earlier take can arrive
            # after it (the store contract suite failed so, under load, once in a while)
            got = {n for n in self.seen if not n[1].startswith(MARKER)}
        else:
            got = set(self.seen)
        self.seen.clear()
        return got


def notes_of(run_id: str, *channels: str) -> set[tuple[str, str]]:
    return {(channel, run_id) for channel in channels}


async def claimed(store: Store, new: NewRun | None = None, worker: str = "w") -> tuple[Run, Lease]:
    """A run created and claimed by ``worker`` (the test has no other queued run)."""
    run, _ = await store.create_run(new or new_run())
    got = await store.claim(worker, 30, 1)
    assert [r.id for r in got] == [run.id]
    return got[0], Lease(run.id, worker, got[0].lease_epoch)


async def events_after(store: Store, run_id: str, after: int) -> list[Event]:
    return await store.read_events(run_id, after, 1000)


def shape(events: Iterable[Event]) -> list[tuple[str, set[str]]]:
    """Each event's type and the keys of its payload: what both backends must agree on."""
    return [(e.type, set(e.data)) for e in events]


def assert_seqs(events: Sequence[Event], first: int) -> None:
    assert [e.seq for e in events] == list(range(first, first + len(events)))


async def status_of(store: Store, run_id: str) -> Any:
    run = await store.get_run(run_id)
    assert run is not None
    return run.status
