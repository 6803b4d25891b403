"""One round of the reaper after an outage (``Worker.reap_once``): a worker whose own
overdue renewal fails reaps nothing, so a database restart does not make it take its
own live runs (each at the cost of an attempt) on the first connection that answers.

Found by ``tests/test_db_faults.py`` under load: after a Postgres restart the renewal
went to a pooled connection that had died with the server, the reap to a fresh one, and
a run reaped three times in four seconds ended ``failed``."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import psycopg

from outlast.runtime.worker import Worker
from tests.harness import make_settings


class Store:
    """The two calls a reaper round makes; ``renew`` fails ``failing`` times first."""

    def __init__(self, failing: int) -> None:
        self.failing = failing
        self.renewals = 0
        self.reaps = 0
        self.grace: float | None = None

    async def renew(self, worker_id: str, ttl: float, run_ids: list[str]) -> list[Any]:
        self.renewals += 1
        if self.failing:
            self.failing -= 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return []

    async def reap(self, grace: float = 0.0) -> list[Any]:
        self.reaps += 1
        self.grace = grace
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
