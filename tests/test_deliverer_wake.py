"""What wakes the outbox's deliverer: where new deliveries announce themselves
(Postgres's trigger NOTIFY), run status changes do not, since each wake costs two
queries in every worker; where they do not (SQLite), each status change does."""

from __future__ import annotations

import asyncio
import contextlib

from outlast.runtime.deliverer import Deliverer
from outlast.store import Store
from outlast.store.hub import STATUS, WEBHOOKS
from tests.harness import eventually, make_settings


async def test_status_changes_wake_the_deliverer_only_where_deliveries_are_silent(
    store: Store,
) -> None:
    hub = store.hub
    before = {channel: len(hub._callbacks[channel]) for channel in (STATUS, WEBHOOKS)}
    deliverer = Deliverer(store, make_settings(), "w1")  # type: ignore[arg-type]
    task = asyncio.create_task(deliverer.run())
    try:
        await eventually(lambda: len(hub._callbacks[WEBHOOKS]) > before[WEBHOOKS])
        added = len(hub._callbacks[STATUS]) - before[STATUS]
        assert added == (0 if store.announces_deliveries else 1), store.backend
        assert store.announces_deliveries == (store.backend == "postgres")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
