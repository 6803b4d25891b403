"""The event log's reads and its retention, written once for both backends over ``Tx``
(``contract/events.py``). The fenced append is each backend's own hot path: one statement
on Postgres, a ``BEGIN IMMEDIATE`` block on SQLite; the unfenced one inside a transaction
that has already decided it may write is ``tx.append_events``."""

from __future__ import annotations

from outlast.store.records import Event
from outlast.store.tx import TxProvider


class EventOps(TxProvider):
    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]:
        async with self._reading() as tx:
            rows = await tx.rows("read_events", run_id=run_id, after=after, limit=limit)
            return [tx.event(r) for r in rows]

    async def first_retained_seq(self, run_id: str) -> int | None:
        async with self._reading() as tx:
            rows = await tx.rows("first_retained_seq", run_id=run_id)
            return rows[0]["seq"] if rows else None

    async def prune_events(self, run_id: str, upto_seq: int) -> int:
        async with self._writing() as tx:
            return len(await tx.rows("prune_events", run_id=run_id, upto=upto_seq))

    async def prune(self, *, keep: int, max_age: float) -> None:
        """Retention: keep at most ``keep`` events per run and none older than ``max_age``
        seconds. Streams that asked for pruned events get a ``gap``, never a silent jump."""
        async with self._writing() as tx:
            await tx.rows("prune_by_count", keep=keep)
            await tx.rows("prune_by_age", age=max_age)
