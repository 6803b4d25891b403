"""Threads and LangGraph runs of the LangGraph face, written once for both backends over
``_reading()`` / ``_writing()`` and the named queries of ``queries_langgraph.sql``.

What must hold on both backends, and is therefore here and not in SQL:

- A new run on a thread and what it does to the thread's active runs (reject, cancel,
  queue behind, supersede an interrupted one) is one transaction under the thread's
  lock: two clients starting runs on one thread cannot both see it idle. What it does
  is decided in ``transitions.multitask``; this only locks, asks and applies.
- A resume answers waits through the same conditional update as ``POST /v1/…/input``
  (``wait_ops.answer_in``): of two concurrent resumes of one interrupt exactly one lands, and
  a resume whose answers do not all land changes nothing.
"""

from __future__ import annotations

import abc
import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from outlast.errors import IdempotencyKeyReused, ThreadBusy
from outlast.store import transitions
from outlast.store.base import (
    EventDraft,
    LgRun,
    NewRun,
    Run,
    Thread,
    ThreadExpiry,
    same_request,
    system_assistant_id,
)
from outlast.store.options import StoreOptions, TTLStrategy
from outlast.store.transition_ops import cancel_in, delete_thread_in
from outlast.store.transitions import Busy
from outlast.store.tx import Tx, TxProvider, append_events, stored_time
from outlast.store.wait_ops import answer_in
from outlast.vocabulary import RunStatus

BUSY = (
    "Thread is already running a task. Wait for it to finish or choose a different "
    "multitask strategy."
)


def _thread(tx: Tx, row: Mapping[str, Any]) -> Thread:
    status = row["run_status"] if "run_status" in row.keys() else None  # noqa: SIM118
    return Thread(
        thread_id=row["thread_id"],
        principal=row["principal"],
        metadata=tx.decode_json(row["metadata"]) or {},
        created_at=stored_time(row["created_at"]),
        updated_at=stored_time(row["updated_at"]),
        run_id=str(row["run_id"]) if status else None,
        run_status=RunStatus(status) if status else None,
        run_graph=row["run_graph"] if status else None,
        run_error=tx.decode_json(row["run_error"]) if status else None,
        asking=bool(row["asking"]) if status else False,
        ttl_minutes=row["ttl_minutes"],
        ttl_strategy=row["ttl_strategy"],
    )


def _lg(tx: Tx, row: Mapping[str, Any]) -> LgRun:
    return LgRun(
        id=str(row["id"]),
        run_id=str(row["run_id"]),
        thread_id=row["thread_id"],
        principal=row["principal"],
        assistant_id=row["assistant_id"],
        from_seq=int(row["from_seq"]),
        kwargs=tx.decode_json(row["kwargs"]) or {},
        metadata=tx.decode_json(row["metadata"]) or {},
        multitask_strategy=row["multitask_strategy"],
        created_at=stored_time(row["created_at"]),
        idempotency_key=row["idempotency_key"],
        deleted=bool(row["deleted"]),
    )


def native(run: Run, assistant_id: str) -> LgRun:
    """A run made through ``/v1``, seen as the one LangGraph run it is."""
    return LgRun(
        id=run.id,
        run_id=run.id,
        thread_id=run.thread_id,
        principal=run.principal,
        assistant_id=assistant_id,
        from_seq=0,
        kwargs={"input": run.input, "config": run.config},
        metadata=run.metadata,
        multitask_strategy="enqueue",
        created_at=run.created_at,
        idempotency_key=run.idempotency_key,
    )


class LangGraphOps(TxProvider):
    options: StoreOptions

    @abc.abstractmethod
    async def _insert_run(self, tx: Tx, new: NewRun) -> tuple[Run, bool]: ...

    # -- threads -----------------------------------------------------------------------

    async def lg_create_thread(
        self,
        thread_id: str,
        principal: str,
        metadata: dict[str, Any],
        ttl_minutes: float | None = None,
        ttl_strategy: TTLStrategy = "delete",
    ) -> tuple[Thread, bool]:
        if ttl_minutes is None:  # the deployment's default, strategy and all
            ttl_minutes = self.options.thread_ttl.default_minutes
            ttl_strategy = self.options.thread_ttl.strategy
        async with self._writing() as tx:
            rows = await tx.rows(
                "lg_thread_insert",
                thread_id=thread_id,
                principal=principal,
                metadata=tx.encode_json(metadata),
                ttl=ttl_minutes,
                strategy=ttl_strategy,
            )
            if rows:
                return _thread(tx, rows[0]), True
            found = await tx.rows("lg_thread_get", thread_id=thread_id)
            return _thread(tx, found[0]), False

    async def lg_threads(
        self,
        *,
        thread_id: str | None = None,
        principal: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Thread]:
        async with self._reading() as tx:
            rows = await tx.rows(
                "lg_threads_with_latest",
                thread_id=thread_id,
                principal=principal,
                metadata=tx.encode_json(metadata) if metadata else None,
            )
            threads = [_thread(tx, r) for r in rows]
        if metadata:  # SQLite has no containment operator; Postgres already filtered
            threads = [t for t in threads if contains(t.metadata, metadata)]
        return threads

    async def lg_set_thread_metadata(self, thread_id: str, patch: dict[str, Any]) -> Thread | None:
        async with self._writing() as tx:
            return await _merge_metadata(tx, thread_id, patch)

    async def lg_set_thread_ttl(
        self, thread_id: str, ttl_minutes: float | None, strategy: TTLStrategy = "delete"
    ) -> Thread | None:
        async with self._writing() as tx:
            rows = await tx.rows(
                "lg_thread_set_ttl", thread_id=thread_id, ttl=ttl_minutes, strategy=strategy
            )
            return _thread(tx, rows[0]) if rows else None

    async def lg_thread_expiry(self, thread_id: str) -> ThreadExpiry | None:
        async with self._reading() as tx:
            rows = await tx.rows("lg_thread_last_update", thread_id=thread_id)
        if not rows or rows[0]["ttl_minutes"] is None:
            return None
        minutes = float(rows[0]["ttl_minutes"])
        last = stored_time(rows[0]["last_update"])
        return ThreadExpiry(
            strategy=rows[0]["ttl_strategy"],
            ttl_minutes=minutes,
            expires_at=last + dt.timedelta(minutes=minutes),
        )

    async def lg_delete_thread(self, thread_id: str) -> bool:
        async with self._writing() as tx:
            await tx.rows("thread_lock", thread_id=thread_id)
            return await delete_thread_in(tx, thread_id)

    # -- runs --------------------------------------------------------------------------

    async def lg_expire_temporary(self, age: float) -> list[str]:
        async with self._writing() as tx:
            ids = [r["thread_id"] for r in await tx.rows("lg_temporary_done", age=age)]
            for thread_id in ids:  # their runs have all ended: none is kept
                await tx.rows("lg_thread_delete_runs", thread_id=thread_id, keep="[]")
                await tx.rows("lg_thread_delete", thread_id=thread_id)
            return ids

    async def lg_create_run(
        self,
        new: NewRun,
        lg: LgRun,
        *,
        strategy: str,
        supersede_reason: str,
        temporary: bool = False,
    ) -> tuple[LgRun, Run, bool]:
        async with self._writing() as tx:
            await tx.rows("thread_lock", thread_id=new.thread_id)
            if new.idempotency_key is not None:
                replay = await _replayed(tx, new)
                if replay is not None:
                    return replay
            busy = []
            for row in await tx.rows("lg_thread_runs_active", thread_id=new.thread_id):
                active = tx.run(row)
                asking = active.status == RunStatus.WAITING and await _asking(tx, active.id)
                busy.append(Busy(active.id, active.status, asking))
            decided = transitions.multitask(
                strategy, busy, new_run=new.id, supersede_reason=supersede_reason
            )
            if decided.refused_by is not None:
                raise ThreadBusy(BUSY)
            for run_id, ask in decided.cancel:
                await cancel_in(tx, run_id, ask)
            for run_id in decided.forget:
                await tx.rows("lg_run_mark_deleted", run_id=run_id)
            run, created = await self._insert_run(tx, new)
            if temporary:
                await tx.rows("lg_thread_mark_temporary", thread_id=new.thread_id)
            rows = await _insert_lg(tx, lg)
            await _merge_metadata(
                tx, new.thread_id, {"graph_id": new.graph, "assistant_id": lg.assistant_id}
            )
            return _lg(tx, rows[0]), run, created

    async def lg_resume(
        self,
        run_id: str,
        answers: dict[str, Any],
        lg: LgRun,
        resume_with: dict[str, Any] | None = None,
    ) -> tuple[LgRun, bool]:
        async with self._writing() as tx:
            if lg.idempotency_key is not None:
                found = await tx.rows(
                    "lg_run_by_key", principal=lg.principal, key=lg.idempotency_key
                )
                if found:
                    existing = _lg(tx, found[0])
                    if existing.kwargs != lg.kwargs or existing.run_id != run_id:
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {lg.idempotency_key!r} was used for run "
                            f"{existing.id} with a different request body"
                        )
                    return existing, False
            locked = await tx.rows("run_lock", id=run_id)
            from_seq = int(locked[0]["last_seq"])
            drafts: list[EventDraft] = []
            for wait_id, value in answers.items():
                wait = tx.wait((await tx.rows("w_get", id=wait_id))[0])
                _, more = await answer_in(tx, wait, value, "resume")
                drafts.extend(more)
            if drafts:
                await append_events(tx, run_id, drafts)
            if resume_with:
                with_waits = {**resume_with, "waits": sorted(answers)}
                await tx.rows(
                    "lg_run_resume_with", id=run_id, resume_with=tx.encode_json(with_waits)
                )
            rows = await _insert_lg(tx, _with(lg, run_id=run_id, from_seq=from_seq))
            return _lg(tx, rows[0]), True

    async def lg_get_run(self, lg_id: str) -> LgRun | None:
        async with self._reading() as tx:
            rows = await tx.rows("lg_run_get", id=lg_id)
            return _lg(tx, rows[0]) if rows else None

    async def lg_run_by_key(self, principal: str, key: str) -> LgRun | None:
        async with self._reading() as tx:
            rows = await tx.rows("lg_run_by_key", principal=principal, key=key)
            return _lg(tx, rows[0]) if rows else None

    async def lg_runs_of_thread(self, thread_id: str) -> list[LgRun]:
        async with self._reading() as tx:
            made = [_lg(tx, r) for r in await tx.rows("lg_runs_of_thread", thread_id=thread_id)]
            plain = [
                tx.run(r) for r in await tx.rows("lg_native_runs_of_thread", thread_id=thread_id)
            ]
        runs = made + [native(r, system_assistant_id(r.graph)) for r in plain]
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    async def lg_runs_of_run(self, run_id: str) -> list[LgRun]:
        async with self._reading() as tx:
            return [_lg(tx, r) for r in await tx.rows("lg_runs_of_run", run_id=run_id)]

    async def lg_delete_runs_of(self, run_id: str) -> None:
        async with self._writing() as tx:
            await tx.rows("lg_run_mark_deleted", run_id=run_id)


def contains(have: Any, want: Any) -> bool:
    """JSON containment, as Postgres' ``@>``: every key of ``want`` is in ``have`` with a
    value that contains the wanted one; arrays contain every wanted element."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and contains(have[k], v) for k, v in want.items()
        )
    if isinstance(want, list):
        return isinstance(have, list) and all(any(contains(h, w) for h in have) for w in want)
    return bool(have == want)


def _with(lg: LgRun, **changes: Any) -> LgRun:
    return dataclasses.replace(lg, **changes)


async def _insert_lg(tx: Tx, lg: LgRun) -> list[Mapping[str, Any]]:
    rows = await tx.rows(
        "lg_run_insert",
        id=lg.id,
        run_id=lg.run_id,
        thread_id=lg.thread_id,
        principal=lg.principal,
        assistant_id=lg.assistant_id,
        from_seq=lg.from_seq,
        kwargs=tx.encode_json(lg.kwargs),
        metadata=tx.encode_json(lg.metadata),
        multitask_strategy=lg.multitask_strategy,
        idempotency_key=lg.idempotency_key,
    )
    if not rows:  # the run was replayed by its idempotency key: its first stretch exists
        rows = await tx.rows("lg_run_get", id=lg.id)
    return rows


async def _replayed(tx: Tx, new: NewRun) -> tuple[LgRun, Run, bool] | None:
    """The run this idempotency key already made, if any; nothing else is touched."""
    found = await tx.rows("get_by_key", principal=new.principal, key=new.idempotency_key)
    if not found:
        return None
    run = tx.run(found[0])
    same_request(new, run)
    rows = await tx.rows("lg_run_get", id=run.id)
    return _lg(tx, rows[0]), run, False


async def _asking(tx: Tx, run_id: str) -> bool:
    return bool((await tx.rows("lg_asking", run_id=run_id))[0]["n"])


async def _merge_metadata(tx: Tx, thread_id: str, patch: dict[str, Any]) -> Thread | None:
    found = await tx.rows("lg_thread_get", thread_id=thread_id)
    if not found:
        return None
    current = tx.decode_json(found[0]["metadata"]) or {}
    rows = await tx.rows(
        "lg_thread_set_metadata", thread_id=thread_id, metadata=tx.encode_json({**current, **patch})
    )
    return _thread(tx, rows[0])
