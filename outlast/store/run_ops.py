"""The run rows' operations written once for both backends over ``Tx``: the reads of runs
(``contract/runs.py``; the worker's side, claim, renew, finish, is each backend's own, the
cold-path transitions ``transition_ops.py``'s), runs on a thread (``contract/threads.py``)
and the lease holder's records of what its run does and may spend
(``contract/activity.py``)."""

from __future__ import annotations

import abc
from typing import Any

from outlast.errors import LeaseLost, ThreadBusy
from outlast.store.records import Lease, ListCursor, NewRun, Run
from outlast.store.tx import Tx, TxProvider
from outlast.vocabulary import RunStatus


class RunReadOps(TxProvider):
    """The reads of run rows: one row, a page, the counts the limits and metrics use."""

    async def get_run(self, run_id: str) -> Run | None:
        async with self._reading() as tx:
            rows = await tx.rows("get_run", id=run_id)
            return tx.run(rows[0]) if rows else None

    async def list_runs(
        self,
        *,
        thread_id: str | None,
        status: RunStatus | None,
        limit: int,
        before: ListCursor | None,
        principal: str | None = "",
    ) -> list[Run]:
        async with self._reading() as tx:
            rows = await tx.rows(
                "list_runs",
                principal=principal,
                thread_id=thread_id,
                status=status.value if status else None,
                before=before.pos if before else None,
                limit=limit,
            )
            return [tx.run(r) for r in rows]

    async def get_run_by_key(self, principal: str, key: str) -> Run | None:
        async with self._reading() as tx:
            rows = await tx.rows("get_by_key", principal=principal, key=key)
            return tx.run(rows[0]) if rows else None

    async def count_active(self, principal: str) -> int:
        async with self._reading() as tx:
            return int((await tx.rows("count_active", principal=principal))[0]["n"])

    async def count_runs_by_status(self) -> dict[str, int]:
        async with self._reading() as tx:
            return {r["status"]: int(r["n"]) for r in await tx.rows("count_runs_by_status")}


class ThreadOps(TxProvider):
    """Runs on a thread: one active at a time, checked where the run is inserted."""

    @abc.abstractmethod
    async def _insert_run(self, tx: Tx, new: NewRun) -> tuple[Run, bool]:
        """The backend's insert of a run (and its eager claim) inside ``tx``."""

    async def create_thread_run(self, new: NewRun, *, if_busy: str) -> tuple[Run, bool]:
        """A run on an existing thread: refused with ThreadBusy while another run of the
        thread is active, unless ``if_busy == "enqueue"``. The check and the insert are one
        transaction, serialized per thread."""
        async with self._writing() as tx:
            await tx.rows("thread_lock", thread_id=new.thread_id)
            if if_busy != "enqueue":
                active = await tx.rows("thread_active", thread_id=new.thread_id)
                if active:
                    busy = tx.run(active[0])
                    raise ThreadBusy(
                        f"thread {new.thread_id} has an active run {busy.id} ({busy.status}); "
                        "wait for it, cancel it, or ask to enqueue (if_busy=enqueue)"
                    )
            run, created = await self._insert_run(tx, new)
        return run, created

    async def latest_run(self, thread_id: str) -> Run | None:
        async with self._reading() as tx:
            rows = await tx.rows("thread_latest", thread_id=thread_id)
            return tx.run(rows[0]) if rows else None


class ActivityOps(TxProvider):
    """The lease holder's fenced records on its run row: what it does, what the
    supervisor remembers, the budget it may spend."""

    async def set_activity(
        self, lease: Lease, activity: dict[str, Any] | None, usage: dict[str, Any] | None = None
    ) -> None:
        await self._fenced_set("set_activity", lease, activity=activity, usage=usage)

    async def set_supervision(self, lease: Lease, supervision: dict[str, Any]) -> None:
        await self._fenced_set("set_supervision", lease, supervision=supervision)

    async def apply_budget(
        self, lease: Lease, budget: dict[str, Any], consumed_wait: str | None
    ) -> None:
        async with self._writing() as tx:
            done = await tx.rows(
                "set_budget",
                run_id=lease.run_id,
                worker_id=lease.worker_id,
                epoch=lease.epoch,
                budget=tx.encode_json(budget),
            )
            if not done:
                raise LeaseLost.of(lease.run_id, lease.epoch)
            if consumed_wait is not None:
                await tx.rows("w_consume", id=consumed_wait)

    async def _fenced_set(self, query: str, lease: Lease, **columns: Any) -> None:
        """One fenced ``UPDATE`` of JSON columns of the leased run (LeaseLost if the
        lease's epoch is gone)."""
        async with self._writing() as tx:
            encoded = {name: tx.encode_json(value) for name, value in columns.items()}
            done = await tx.rows(
                query, run_id=lease.run_id, worker_id=lease.worker_id, epoch=lease.epoch, **encoded
            )
        if not done:
            raise LeaseLost.of(lease.run_id, lease.epoch)
