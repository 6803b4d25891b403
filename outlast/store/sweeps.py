"""The TTL sweeps (``langgraph.json``'s ``store.ttl`` and ``checkpointer.ttl``), written
once for both backends: expired items, and threads past their TTL.

A sweep runs when its lease row in ``outlast_sweeps`` says it is due: the process that
moves ``next_at`` forward (one conditional upsert) sweeps, and every other process that
asks within the interval is told no. So with N processes there is one sweep per interval,
not N, whatever their retention loops' timing.
"""

from __future__ import annotations

import logging

from langgraph.store.base import BaseStore

from outlast.store import item_backends
from outlast.store.options import ITEMS_SWEEP, THREADS_SWEEP, StoreOptions
from outlast.store.tx import TxProvider

log = logging.getLogger(__name__)


class SweepOps(TxProvider):
    options: StoreOptions
    _items: BaseStore | None  # the item store (Store.items), opened by the backend

    async def _sweep_due(self, name: str, minutes: float) -> bool:
        async with self._writing() as tx:
            return bool(await tx.rows("sweep_due", sweep=name, every=minutes * 60))

    async def sweep_items(self, *, force: bool = False) -> int | None:
        minutes = self.options.item_ttl.sweep_minutes
        if not force and not await self._sweep_due(ITEMS_SWEEP, minutes):
            return None
        if self._items is None:
            raise RuntimeError("the store is not open (no item store)")
        deleted = await item_backends.sweep(self._items)
        if deleted:
            log.info("store: swept %d expired items", deleted)
        return deleted

    async def lg_expire_threads(self, *, force: bool = False) -> list[str] | None:
        minutes = self.options.thread_ttl.sweep_minutes
        if not force and not await self._sweep_due(THREADS_SWEEP, minutes):
            return None
        async with self._writing() as tx:
            ids = [r["thread_id"] for r in await tx.rows("lg_threads_expired")]
            for thread_id in ids:
                await tx.rows("lg_thread_delete_runs", thread_id=thread_id)
                await tx.rows("lg_thread_delete", thread_id=thread_id)
        if ids:
            log.info("store: deleted %d threads past their TTL", len(ids))
        return ids
