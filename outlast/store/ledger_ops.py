"""The effects ledger written once for both backends (the contract: ``contract/effects.py``)."""

from __future__ import annotations

from typing import Any

from outlast.errors import LeaseLost
from outlast.store.contract.effects import EffectStore
from outlast.store.records import Effect, Lease
from outlast.store.tx import Tx, TxProvider


async def _fence(tx: Tx, lease: Lease | None) -> None:
    """In the write's transaction: the run is still this lease's (and stays so until the
    commit: the row is locked ``FOR KEY SHARE`` on Postgres, the database on SQLite)."""
    if lease is None:
        return
    held = await tx.rows(
        "e_fence", run_id=lease.run_id, worker_id=lease.worker_id, epoch=lease.epoch
    )
    if not held:
        raise LeaseLost.of(lease.run_id, lease.epoch)


class LedgerOps(TxProvider, EffectStore):
    async def effect_begin(
        self,
        run_id: str,
        key: str,
        tool: str,
        args_hash: str,
        args: Any,
        idempotent: bool,
        *,
        compensate: str | None = None,
        compensates: str | None = None,
        lease: Lease | None = None,
    ) -> tuple[Effect, bool]:
        async with self._writing() as tx:
            await _fence(tx, lease)
            rows = await tx.rows(
                "e_begin",
                run_id=run_id,
                key=key,
                tool=tool,
                args_hash=args_hash,
                args=tx.encode_json(args),
                idempotent=idempotent,
                compensate=compensate,
                compensates=compensates,
            )
            if rows:
                return tx.effect(rows[0]), True
            return tx.effect((await tx.rows("e_get", run_id=run_id, key=key))[0]), False

    async def effect_retry(self, run_id: str, key: str, lease: Lease | None = None) -> Effect:
        async with self._writing() as tx:
            await _fence(tx, lease)
            return tx.effect((await tx.rows("e_retry", run_id=run_id, key=key))[0])

    async def effect_finish(
        self, run_id: str, key: str, status: str, result: Any = None, error: str | None = None
    ) -> Effect:
        async with self._writing() as tx:
            rows = await tx.rows(
                "e_finish",
                run_id=run_id,
                key=key,
                status=status,
                result=tx.encode_json(result),
                error=error,
            )
            return tx.effect(rows[0])

    async def list_effects(self, run_id: str) -> list[Effect]:
        async with self._reading() as tx:
            return [tx.effect(r) for r in await tx.rows("e_list", run_id=run_id)]
