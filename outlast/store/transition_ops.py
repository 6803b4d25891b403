"""The cold-path transitions written once for both backends: lock the run row, ask
``transitions.py`` what changes, write it.

The lock is the backend's: ``SELECT … FOR UPDATE`` on Postgres (``FOR UPDATE SKIP
LOCKED`` for the reaper, which passes over a run whose holder is writing a checkpoint),
the ``BEGIN IMMEDIATE`` of ``_writing()`` on SQLite. The write is the same for every
transition: one ``UPDATE`` of the row with what was decided, its event at the seq that
update took, the waits withdrawn if so decided, the notifications (sent at commit). The
hot path (claim, append, finish) stays one statement per backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from outlast.errors import LeaseLost
from outlast.store import transitions
from outlast.store.hub import CONTROL
from outlast.store.records import Lease, Reaped, Run
from outlast.store.transitions import Ask, Change, Facts
from outlast.store.tx import Tx, TxProvider


async def facts_of(tx: Tx, run: Run) -> Facts:
    """The facts of a locked run: its row and whether its ledger owes compensations."""
    effects = [tx.effect(r) for r in await tx.rows("e_list", run_id=run.id)]
    return Facts.of(run, effects)


async def apply(tx: Tx, run: Run, change: Change) -> Run:
    """Write a decided change of the locked ``run``; the row as it is now."""
    rows = await tx.rows(
        "run_apply",
        run_id=run.id,
        status=change.status.value,
        ending=tx.encode_json(change.ending),
        error=tx.encode_json(change.error),
        attempts=change.attempts,
        keep_worker=change.keep_worker,
        epoch=1 if change.new_epoch else 0,
    )
    after = tx.run(rows[0])
    await tx.rows(
        "insert_event",
        run_id=run.id,
        seq=after.last_seq,
        type=change.event.type,
        data=tx.encode_json(change.event.data),
    )
    if change.withdraw_waits:
        await tx.rows("w_withdraw", run_id=run.id)
    for channel in change.notify:
        await tx.notify(channel, run.id)
    return after


async def cancel_in(tx: Tx, run_id: str, ask: Ask) -> tuple[Run | None, bool]:
    """A cancel inside an open transaction: the run as it is afterwards (None if
    unknown), and whether the cancel changed it."""
    rows = await tx.rows("run_lock", id=run_id)
    if not rows:
        return None, False
    run = tx.run(rows[0])
    change = transitions.cancel(await facts_of(tx, run), ask)
    if change is None:
        return run, False
    return await apply(tx, run, change), True


async def delete_thread_in(tx: Tx, thread_id: str) -> bool:
    """Delete a thread and its runs inside an open transaction (a client's delete, a TTL):
    a run that owes compensations (``transitions.outlives_its_thread``) is cancelled and
    kept for its worker to undo what it did; whether the thread existed."""
    kept: list[str] = []
    for row in await tx.rows("lg_thread_runs_active", thread_id=thread_id):
        run = tx.run(row)
        if transitions.outlives_its_thread(await facts_of(tx, run)):
            await cancel_in(tx, run.id, Ask(transitions.THREAD_DELETED))
            kept.append(run.id)
        else:
            # its worker, if it has one, loses its lease (the row is gone) and stops
            # writing; the control notification makes it look at once
            await tx.notify(CONTROL, run.id)
    await tx.rows("lg_thread_delete_runs", thread_id=thread_id, keep=tx.encode_json(kept))
    return bool(await tx.rows("lg_thread_delete", thread_id=thread_id))


async def _progressed(tx: Tx, run: Run, durability: str) -> bool:
    """Whether the attempt of the locked ``run`` made progress a successor keeps
    (``transitions.progressed``): a step saved since its claim, under its durability
    (the request's, else the deployment's ``durability``)."""
    (row,) = await tx.rows("run_progress", run_id=run.id)
    durable = (run.options or {}).get("durability") or durability
    return transitions.progressed(bool(row["progressed"]), str(durable))


async def leased(tx: Tx, lease: Lease) -> Run:
    """The run locked under ``lease``; LeaseLost if the lease is no longer held."""
    rows = await tx.rows(
        "run_lock_leased", run_id=lease.run_id, worker_id=lease.worker_id, epoch=lease.epoch
    )
    if not rows:
        raise LeaseLost.of(lease.run_id, lease.epoch)
    return tx.run(rows[0])


class TransitionOps(TxProvider):
    """``request_cancel``, ``release``, ``reap`` and ``set_ending`` of both stores."""

    async def request_cancel(
        self, run_id: str, reason: str, *, rollback: bool = False
    ) -> Run | None:
        async with self._writing() as tx:
            run, _ = await cancel_in(tx, run_id, Ask(reason, rollback=rollback))
            if rollback and run is not None:
                # gone for LangGraph's clients with the cancel that rolls it back
                await tx.rows("lg_run_mark_deleted", run_id=run_id)
            return run

    async def release(self, lease: Lease, reason: str) -> int:
        async with self._writing() as tx:
            run = await leased(tx, lease)
            change = transitions.release(await facts_of(tx, run), reason)
            return (await apply(tx, run, change)).last_seq

    async def reap(
        self,
        limit: int = 100,
        grace: float = 0.0,
        *,
        holder: str | None = None,
        held: Sequence[str] = (),
        durability: str = "sync",
    ) -> list[Reaped]:
        reaped: list[Reaped] = []
        async with self._writing() as tx:
            expired = await tx.rows(
                "run_lock_expired",
                limit=limit,
                grace=grace,
                holder=holder,
                held=tx.encode_json(list(held)),
            )
            for row in expired:
                run = tx.run(row)
                facts = replace(
                    await facts_of(tx, run), progressed=await _progressed(tx, run, durability)
                )
                after = await apply(tx, run, transitions.reap(facts))
                reaped.append(Reaped(run.id, after.status, after.last_seq))
        return reaped

    async def set_ending(self, lease: Lease, ending: dict[str, Any]) -> dict[str, Any]:
        async with self._writing() as tx:
            run = await leased(tx, lease)
            recorded = transitions.set_ending(await facts_of(tx, run), ending)
            await tx.rows("run_set_ending", run_id=run.id, ending=tx.encode_json(recorded))
            return recorded
