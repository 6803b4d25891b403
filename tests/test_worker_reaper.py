"""One round of the reaper after an outage (``Worker.reap_once``): a worker whose own
overdue renewal fails reaps nothing, so a database restart does not make it take its
own live runs (each at the cost of an attempt) on the first connection that answers.

Found by ``tests/test_db_faults.py`` under load: after a Postgres restart the renewal
went to a pooled connection that had died with the server, the reap to a fresh one, and
a run reaped three times in four seconds ended ``failed``."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from types import SimpleNamespace
from typing import Any

import psycopg

from outlast.runtime.outcomes import LEASE_LOST, Outcome
from outlast.runtime.worker import Worker
from tests.harness import make_settings


class Store:
    """The two calls a reaper round makes; ``renew`` fails ``failing`` times first."""

    def __init__(self, failing: int) -> None:
        self.failing = failing
        self.renewals = 0
        self.reaps = 0
        self.grace: float | None = None
        self.spared: tuple[str | None, list[str] | None] = (None, None)
        self.durability = ""

    async def renew(self, worker_id: str, ttl: float, run_ids: list[str]) -> list[Any]:
        self.renewals += 1
        if self.failing:
            self.failing -= 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return []

    async def reap(
        self,
        grace: float = 0.0,
        *,
        holder: str | None = None,
        held: list[str] | None = None,
        durability: str = "sync",
    ) -> list[Any]:
        self.reaps += 1
        self.grace = grace
        self.spared = (holder, held)
        self.durability = durability
        return []


def _worker(store: Store, holding: bool) -> Worker:
    worker = Worker(store, None, make_settings())  # type: ignore[arg-type]
    if holding:
        worker.held["run"] = SimpleNamespace(busy=False)  # type: ignore[assignment]
    worker._renewed = time.monotonic() - 60  # the last renewal long ago: an outage
    return worker


async def test_a_failed_overdue_renewal_means_no_reap_this_round() -> None:
    store = Store(failing=2)
    await _worker(store, holding=True).reap_once()
    assert (store.renewals, store.reaps) == (2, 0)


async def test_a_dead_pooled_connection_costs_one_try_not_the_round() -> None:
    store = Store(failing=1)
    await _worker(store, holding=True).reap_once()
    assert (store.renewals, store.reaps) == (2, 1)


async def test_a_worker_holding_nothing_reaps_without_renewing() -> None:
    store = Store(failing=2)
    await _worker(store, holding=False).reap_once()
    assert (store.renewals, store.reaps) == (0, 1)


async def test_the_reaper_grants_a_lease_of_grace_after_a_database_restart() -> None:
    """A lease that ran out while the database was down is its holder's for one more
    lease after the server's start (queries.sql run_lock_expired, store/outage.py)."""
    store = Store(failing=0)
    worker = _worker(store, holding=False)
    await worker.reap_once()
    assert store.grace == worker.settings.worker_lease_ttl > 0


async def test_the_reaper_spares_the_runs_its_own_worker_executes() -> None:
    """A worker whose loop was starved past its own lease is late, not lost: its reaper
    never takes the runs it executes (and counts no attempt of theirs), and tells the
    store the deployment's durability (under ``exit`` a streamed step is no progress)."""
    store = Store(failing=0)
    worker = _worker(store, holding=True)
    worker.settings = make_settings(durability="exit")
    await worker.reap_once()
    assert store.spared == (worker.id, ["run"]) and store.durability == "exit"


class Execution:
    """An execution that runs until it is told to stop."""

    def __init__(self) -> None:
        now = dt.datetime.now(dt.UTC)
        self.run = SimpleNamespace(
            id="run", thread_id="t", has_history=False, created_at=now, updated_at=now
        )
        self.stops: list[str] = []
        self.done = asyncio.Event()
        self.busy = True

    def request_stop(self, reason: str) -> None:
        self.stops.append(reason)
        self.done.set()

    async def execute(self) -> Outcome:
        await self.done.wait()
        return Outcome(None, "lease lost")


async def test_a_run_claimed_again_stops_its_earlier_execution_and_keeps_the_new_one() -> None:
    """A worker starved past its lease loses its run to another worker's reaper, and may
    claim it again before its old execution has noticed. The old one stops (it lost the
    lease); the new one stays held, so its lease is renewed: the old one ending must not
    take it out of ``held``, where the heartbeat would no longer renew it."""
    worker = _worker(Store(failing=0), holding=False)
    old, new = Execution(), Execution()
    worker._start(old)  # type: ignore[arg-type]
    worker._start(new)  # type: ignore[arg-type]
    assert old.stops == [LEASE_LOST] and new.stops == []
    await asyncio.wait_for(asyncio.gather(*worker._stale), 10)
    assert worker.held == {"run": new} and not worker._stale
    new.done.set()
    await asyncio.wait_for(worker._tasks["run"], 10)
    assert worker.held == {} and worker._tasks == {}
