"""The TTL sweeps (``langgraph.json``'s ``store.ttl`` and ``checkpointer.ttl``), written
once for both backends: expired items, and threads past their TTL (deleted, or pruned to
their latest checkpoints under ``keep_latest``); and ``POST /threads/prune``, which does
to the threads it names now what their TTL would.

A sweep runs when its lease row in ``outlast_sweeps`` says it is due: the process that
moves ``next_at`` forward (one conditional upsert) sweeps, and every other process that
asks within the interval is told no. So with N processes there is one sweep per interval,
not N, whatever their retention loops' timing.

A thread is pruned (``keep_latest``) inside the transaction that holds it (its row
locked on Postgres, the write lock on SQLite): no run is accepted on it meanwhile, so
no run writes checkpoints while its history is cut. The checkpoints are the saver's to
prune (``aprune``, on both savers), as they are its to write and delete.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.store.base import BaseStore

from outlast.errors import ThreadBusy
from outlast.store import item_backends
from outlast.store.options import ITEMS_SWEEP, THREADS_SWEEP, StoreOptions, TTLStrategy
from outlast.store.transition_ops import delete_thread_in
from outlast.store.tx import Tx, TxProvider

log = logging.getLogger(__name__)


class SweepOps(TxProvider):
    options: StoreOptions
    _items: BaseStore | None  # the item store (Store.items), opened by the backend

    @abc.abstractmethod
    def checkpointer(self) -> BaseCheckpointSaver[Any]: ...

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
            rows = await tx.rows("lg_threads_expired")
            deleted = [r["thread_id"] for r in rows if r["ttl_strategy"] != "keep_latest"]
            pruned = [r["thread_id"] for r in rows if r["ttl_strategy"] == "keep_latest"]
            for thread_id in deleted:
                await _delete_rows(tx, thread_id)
            for thread_id in pruned:
                try:
                    await self._keep_latest_in(tx, thread_id)
                except NotImplementedError as exc:
                    # marked pruned all the same: tried again only after its next update
                    log.warning("store: thread %s not pruned: %s", thread_id, exc)
                    await tx.rows("lg_thread_mark_pruned", thread_id=thread_id)
        if deleted or pruned:
            log.info(
                "store: %d threads past their TTL deleted, %d pruned to their latest",
                len(deleted),
                len(pruned),
            )
        return deleted

    async def lg_prune_threads(self, thread_ids: Sequence[str], strategy: TTLStrategy) -> list[str]:
        ids = sorted(set(thread_ids))  # one lock order for every prune
        async with self._writing() as tx:
            found = []
            for thread_id in ids:
                if not await tx.rows("lg_thread_lock_row", thread_id=thread_id):
                    continue
                if await tx.rows("lg_thread_runs_active", thread_id=thread_id):
                    raise ThreadBusy(
                        f"Thread {thread_id} has an active run; wait for it or cancel it"
                    )
                found.append(thread_id)
            for thread_id in found:
                if strategy == "delete":
                    await _delete_rows(tx, thread_id)
                else:
                    await self._keep_latest_in(tx, thread_id)
        if strategy == "delete" and found:  # the rows first; see runtime/retention.py
            await self.checkpointer().aprune(found, strategy="delete")
        return found

    async def _keep_latest_in(self, tx: Tx, thread_id: str) -> None:
        """Raises ``NotImplementedError`` for a thread the saver cannot prune (on Postgres,
        one whose graph uses a ``DeltaChannel``: its state is rebuilt from older
        checkpoints)."""
        await self.checkpointer().aprune([thread_id], strategy="keep_latest")
        await tx.rows("lg_thread_mark_pruned", thread_id=thread_id)


async def _delete_rows(tx: Tx, thread_id: str) -> None:
    await delete_thread_in(tx, thread_id)
