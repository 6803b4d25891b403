"""Store operations written once, for both backends: reads, waits, signals, threads and
retention.

Each backend supplies two ways into its database (``TxProvider``): ``_reading()``, for
statements that only read and never take a write lock, and ``_writing()``, a transaction
(``BEGIN`` on Postgres, ``BEGIN IMMEDIATE`` on SQLite). Both hand out a ``Tx``: the named
queries of the backend's own ``queries*.sql``, its JSON and time encodings, and a
``notify`` that is delivered at commit. The logic here is what must be identical on both:

- Answers and signals are stored first and matched second. A wait is answered by a
  conditional ``UPDATE … WHERE status = 'open'``: of twenty concurrent answers exactly
  one changes a row, and only that one requeues the run.
- Parking a run (``park``) keeps the wait of an interrupt that is still pending (a
  partial resume re-raises the others with the same interrupt id) and marks answers the
  graph has consumed as ``resumed``. If an answer is already there (it arrived while the
  run was still running, or a signal came first within the lookback window), the run is
  queued again at once instead of waiting: a wait never hangs because of the order in
  which two messages arrived.
- Listings read what they show in a fixed number of queries per page (``open_waits``
  takes the runs of a whole page), never one query per row.
"""

from __future__ import annotations

import abc
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from outlast.errors import (
    IdempotencyKeyReused,
    LeaseLost,
    ThreadBusy,
    WaitNotFound,
    WaitNotOpen,
)
from outlast.store.base import (
    Effect,
    Event,
    EventDraft,
    Lease,
    ListCursor,
    NewRun,
    Run,
    Wait,
    WaitSpec,
)
from outlast.store.hub import EVENTS, QUEUE, STATUS, WAITS
from outlast.vocabulary import DIGEST, EventType, RunStatus, WaitKind, WaitStatus, is_sealed


class Tx(Protocol):
    """One backend's way of running the shared code's statements. The shared code never
    sees SQL or a driver: it names a query and passes Python values, and the Tx turns
    them into what its database stores (Postgres: jsonb and timestamptz, which psycopg
    adapts; SQLite: JSON text and unix seconds as REAL) and back."""

    async def rows(self, name: str, **params: Any) -> list[Mapping[str, Any]]:
        """Run the named query of this backend's ``queries*.sql``; its rows (none for a
        statement that returns nothing)."""
        ...

    def encode_json(self, value: Any) -> Any:
        """A Python value as a JSON column's parameter (``None`` stays SQL NULL)."""
        ...

    def decode_json(self, value: Any) -> Any:
        """A JSON column as read back into Python (Postgres has already decoded it)."""
        ...

    def encode_time(self, value: Any) -> Any:
        """An aware datetime (or ``None``) as a time column's parameter."""
        ...

    # Row decoders: a row of its table as the contract's frozen dataclass, in this
    # backend's encodings.
    def wait(self, row: Mapping[str, Any]) -> Wait: ...

    def run(self, row: Mapping[str, Any]) -> Run: ...

    def event(self, row: Mapping[str, Any]) -> Event: ...

    def effect(self, row: Mapping[str, Any]) -> Effect: ...

    async def notify(self, channel: str, key: str) -> None:
        """Tell the hub's ``channel`` to look at ``key`` again, once the transaction has
        committed (a reader woken before the commit would find nothing new)."""
        ...


class TxProvider(abc.ABC):
    """What a backend gives the code written once for both (``SharedRunOps``,
    ``AssistantOps``, ``LangGraphOps``): a way to read and a way to write. Every method
    of the shared code picks one, so whether a method can block writers, or be blocked
    by them, is visible where it is written."""

    @abc.abstractmethod
    def _reading(self) -> AbstractAsyncContextManager[Tx]:
        """For statements that only read. It never takes a write lock (SQLite has one
        for the whole file: a read that took it would queue behind every writer and stop
        them all while it ran), and the statements inside see one consistent state
        where the backend offers it cheaply (SQLite: one deferred read transaction on a
        read-only connection; Postgres: autocommit, each statement its own snapshot,
        since a transaction would cost two more round trips on every read). A
        statement that writes fails here on SQLite (the read connection is
        ``query_only``)."""

    @abc.abstractmethod
    def _writing(self) -> AbstractAsyncContextManager[Tx]:
        """One transaction for statements that must change the database together;
        committed when the block ends, rolled back if it raises. Notifications are
        delivered after the commit."""

    async def _fenced_set(self, query: str, lease: Lease, **columns: Any) -> None:
        """One fenced ``UPDATE`` of JSON columns of the leased run (LeaseLost if the
        lease's epoch is gone): the runtime's records of what it does and remembers."""
        async with self._writing() as tx:
            encoded = {name: tx.encode_json(value) for name, value in columns.items()}
            done = await tx.rows(
                query, run_id=lease.run_id, worker_id=lease.worker_id, epoch=lease.epoch, **encoded
            )
        if not done:
            raise LeaseLost.of(lease.run_id, lease.epoch)


async def append_events(tx: Tx, run_id: str, drafts: Sequence[EventDraft]) -> int:
    """Append inside an open transaction; the caller has already decided it may write."""
    rows = await tx.rows("bump_any", run_id=run_id, n=len(drafts))
    last: int = rows[0]["last_seq"]
    first = last - len(drafts) + 1
    for i, draft in enumerate(drafts):
        await tx.rows(
            "insert_event",
            run_id=run_id,
            seq=first + i,
            type=draft.type,
            data=tx.encode_json(draft.data),
        )
    await tx.notify(EVENTS, run_id)
    return last


async def _find_wait(tx: Tx, query: str, run_id: str, wait_id: str) -> Wait:
    """The wait ``wait_id`` of ``run_id`` by ``query`` (``w_get`` locks it, ``w_read``
    does not); WaitNotFound for a malformed id or another run's wait."""
    try:
        uuid.UUID(wait_id)
    except ValueError:
        raise WaitNotFound(f"run {run_id} has no wait {wait_id!r}") from None
    rows = await tx.rows(query, id=wait_id)
    if not rows or str(rows[0]["run_id"]) != run_id:
        raise WaitNotFound(f"run {run_id} has no wait {wait_id!r}")
    return tx.wait(rows[0])


def _ended(wait: Wait, how: str, value: Any) -> EventDraft:
    # Credentials go to the run (through its wait row), never into the event log that
    # every stream reader sees.
    shown = "(redacted)" if wait.kind == "auth" and value is not None else value
    return EventDraft(
        EventType.WAIT_ENDED, {"wait_id": wait.id, "kind": wait.kind, "how": how, "value": shown}
    )


def _same_answer(stored: Any, given: Any) -> bool:
    """Two sealed answers are the same when their keyed digests are (the ciphertexts never
    are: each sealing is randomised)."""
    if is_sealed(stored) and is_sealed(given):
        return bool(stored[DIGEST] == given[DIGEST])
    return bool(stored == given)


async def _answer(
    tx: Tx, wait: Wait, value: Any, how: str, key: str | None = None
) -> tuple[Wait, list[EventDraft]]:
    if wait.kind == WaitKind.AUTH and value is not None and not is_sealed(value):
        # Credentials are stored sealed, whichever face answered: one that came here in
        # the clear is a bug of the caller, and must not reach the disk.
        raise ValueError("an auth wait's answer must be sealed (secretbox.seal_answer)")
    rows = await tx.rows("w_answer", id=wait.id, answer=tx.encode_json(value), how=how, key=key)
    if not rows:
        raise WaitNotOpen(f"wait {wait.id} is {wait.status}; it was not answered again")
    drafts = [_ended(wait, how, value)]
    if await tx.rows("run_requeue_if_waiting", run_id=wait.run_id):
        drafts.append(
            EventDraft(
                EventType.RUN_QUEUED,
                {"status": RunStatus.QUEUED, "reason": f"{wait.kind} wait answered ({how})"},
            )
        )
        await tx.notify(QUEUE, wait.run_id)
        await tx.notify(STATUS, wait.run_id)
    return tx.wait(rows[0]), drafts


class SharedRunOps(TxProvider):
    """The run store's operations that do not depend on the backend (reads, waits,
    signals, threads, retention, the effects ledger), written once over ``Tx`` and mixed
    into both stores. What a backend does its own way (claim, append, finish, with one
    statement on Postgres and a ``BEGIN IMMEDIATE`` block on SQLite) is in its module."""

    # -- reads -------------------------------------------------------------------------

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
        principal: str = "",
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

    async def count_runs_by_status(self) -> dict[str, int]:
        async with self._reading() as tx:
            return {r["status"]: int(r["n"]) for r in await tx.rows("count_runs_by_status")}

    # -- waits, signals, threads, retention ----------------------------------------------

    @abc.abstractmethod
    async def _insert_run(self, tx: Tx, new: NewRun) -> tuple[Run, bool]: ...

    async def park(
        self,
        lease: Lease,
        specs: Sequence[WaitSpec],
        lookback: float,
        events: Sequence[EventDraft] = (),
    ) -> RunStatus:
        """The run stopped at interrupts: record its waits and release it (fenced)."""
        async with self._writing() as tx:
            run_id = lease.run_id
            pending = [s.interrupt_id for s in specs]
            await tx.rows("w_resume_consumed", run_id=run_id, pending=tx.encode_json(pending))
            drafts: list[EventDraft] = list(events)
            for spec in specs:
                if await tx.rows("w_find_live", run_id=run_id, interrupt_id=spec.interrupt_id):
                    continue  # still pending from before (a partial resume re-raised it)
                rows = await tx.rows(
                    "w_insert",
                    id=str(uuid.uuid4()),
                    run_id=run_id,
                    interrupt_id=spec.interrupt_id,
                    kind=spec.kind,
                    object=tx.encode_json(spec.object),
                    prompt=tx.encode_json(spec.prompt),
                    schema=tx.encode_json(spec.schema),
                    event_keys=tx.encode_json(spec.event_keys),
                    has_default=spec.has_default,
                    default_answer=tx.encode_json(spec.default),
                    probe=tx.encode_json(spec.probe),
                    wake_at=tx.encode_time(spec.wake_at),
                    wake_in=spec.wake_in,
                    lease_grace=float((spec.probe or {}).get("every", 0.0)),
                )
                wait = tx.wait(rows[0])
                drafts.append(EventDraft(EventType.WAIT_STARTED, {"wait": wait.public()}))
                if spec.event_keys and lookback > 0:
                    early = await tx.rows(
                        "sig_lookback",
                        keys=tx.encode_json(spec.event_keys),
                        lookback=lookback,
                        run_id=run_id,
                    )
                    if early:
                        value = {
                            "key": early[0]["key"],
                            "payload": tx.decode_json(early[0]["payload"]),
                        }
                        await tx.rows(
                            "w_answer",
                            id=wait.id,
                            answer=tx.encode_json(value),
                            how="signal",
                            key=None,
                        )
                        drafts.append(_ended(wait, "signal", value))
            answered = (await tx.rows("w_count_answered", run_id=run_id))[0]["n"]
            target = RunStatus.QUEUED if answered else RunStatus.WAITING
            parked = await tx.rows(
                "w_park_run",
                run_id=run_id,
                worker_id=lease.worker_id,
                epoch=lease.epoch,
                status=target.value,
            )
            if not parked:
                raise LeaseLost.of(run_id, lease.epoch)
            status = RunStatus(parked[0]["status"])
            if status == RunStatus.CANCELLED:
                await tx.rows("w_settle", run_id=run_id)
                drafts.append(
                    EventDraft(
                        EventType.RUN_CANCELLED,
                        {"status": RunStatus.CANCELLED, "reason": "cancelled while running"},
                    )
                )
            elif status == RunStatus.QUEUED:
                drafts.append(
                    EventDraft(
                        EventType.RUN_QUEUED,
                        {"status": RunStatus.QUEUED, "reason": "answered before it waited"},
                    )
                )
            else:
                kinds = sorted({s.kind for s in specs})
                drafts.append(
                    EventDraft(
                        EventType.RUN_WAITING,
                        {"status": RunStatus.WAITING, "waits": len(specs), "kinds": kinds},
                    )
                )
            await append_events(tx, run_id, drafts)
            await tx.notify(STATUS, run_id)
            if any(s.wake_at is not None or s.wake_in is not None for s in specs):
                await tx.notify(WAITS, run_id)  # wakers re-plan their next nap
            if status != RunStatus.WAITING:
                await tx.notify(QUEUE, run_id)
            return status

    async def answer(
        self, run_id: str, wait_id: str, value: Any, how: str = "input", key: str | None = None
    ) -> tuple[Wait, bool]:
        async with self._writing() as tx:
            wait = await self._lock_wait(tx, run_id, wait_id)
            if wait.status != WaitStatus.OPEN:
                if key is not None and wait.answer_key == key:
                    if not _same_answer(wait.answer, value):
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {key!r} already answered wait {wait_id} "
                            "with another value"
                        )
                    return wait, False  # the same answer, retried
                raise WaitNotOpen(
                    f"wait {wait_id} is already {wait.status}"
                    + (f" ({wait.answered_how})" if wait.answered_how else "")
                    + "; a wait is answered once"
                )
            answered, drafts = await _answer(tx, wait, value, how, key)
            await append_events(tx, run_id, drafts)
            return answered, True

    async def _lock_wait(self, tx: Tx, run_id: str, wait_id: str) -> Wait:
        """The run's wait, its row locked until the transaction ends (Postgres)."""
        return await _find_wait(tx, "w_get", run_id, wait_id)

    async def get_wait(self, run_id: str, wait_id: str) -> Wait:
        async with self._reading() as tx:
            return await _find_wait(tx, "w_read", run_id, wait_id)

    async def list_waits(self, run_id: str, status: str | None = None) -> list[Wait]:
        async with self._reading() as tx:
            return [tx.wait(r) for r in await tx.rows("w_list", run_id=run_id, status=status)]

    async def open_waits(self, run_ids: Sequence[str]) -> dict[str, list[Wait]]:
        """The open waits of many runs in one query, for a listing: a page of waiting
        runs costs one read, whatever its size, not one per run."""
        if not run_ids:
            return {}
        async with self._reading() as tx:
            rows = await tx.rows("w_open_of_runs", run_ids=tx.encode_json(list(run_ids)))
        found: dict[str, list[Wait]] = {}
        for row in rows:  # ordered by run, then as list_waits orders one run's waits
            wait = tx.wait(row)
            found.setdefault(wait.run_id, []).append(wait)
        return found

    async def signal(self, key: str, payload: Any, principal: str = "") -> list[str]:
        """Store the signal, then wake every open wait on ``key`` of the sender's runs
        (another principal's runs never see it); returns the runs woken."""
        async with self._writing() as tx:
            await tx.rows(
                "sig_insert", key=key, payload=tx.encode_json(payload), principal=principal
            )
            woken: list[str] = []
            for row in await tx.rows("sig_match", key=key, principal=principal):
                wait = tx.wait(row)
                _, drafts = await _answer(tx, wait, {"key": key, "payload": payload}, "signal")
                await append_events(tx, wait.run_id, drafts)
                woken.append(wait.run_id)
            return woken

    async def due_waits(self, limit: int, hold: float) -> list[Wait]:
        """Claim waits whose time has come (timers, deadlines, probes), pushing their
        ``wake_at`` ``hold`` seconds ahead so no other worker takes them meanwhile."""
        async with self._writing() as tx:
            return [tx.wait(r) for r in await tx.rows("w_due", limit=limit, hold=hold)]

    async def next_due_in(self) -> float | None:
        async with self._reading() as tx:
            rows = await tx.rows("w_next_due")
            seconds = rows[0]["seconds"] if rows else None
            return None if seconds is None else float(seconds)

    async def wake(self, wait: Wait, value: Any, how: str) -> bool:
        """End a due wait by itself (timer, deadline, probe result); False if it was
        answered meanwhile."""
        async with self._writing() as tx:
            try:
                _, drafts = await _answer(tx, wait, value, how)
            except WaitNotOpen:
                return False
            await append_events(tx, wait.run_id, drafts)
            return True

    async def probe_ok(self, wait: Wait, every: float, detail: Any) -> None:
        async with self._writing() as tx:
            rows = await tx.rows("w_probe_ok", id=wait.id, every=every)
            if rows:
                renewed = tx.wait(rows[0])
                await append_events(
                    tx,
                    wait.run_id,
                    [
                        EventDraft(
                            EventType.WAIT_RENEWED,
                            {
                                "wait_id": wait.id,
                                "renewals": renewed.renewals,
                                "detail": detail,
                                "lease_expires_at": renewed.public()["lease_expires_at"],
                            },
                        )
                    ],
                )

    async def probe_failed(self, wait: Wait, every: float, error: str) -> int:
        async with self._writing() as tx:
            rows = await tx.rows("w_probe_failed", id=wait.id, every=every)
            if not rows:
                return 0
            failures: int = rows[0]["failures"]
            await append_events(
                tx,
                wait.run_id,
                [
                    EventDraft(
                        EventType.WAIT_PROBE_FAILED,
                        {"wait_id": wait.id, "failures": failures, "error": error},
                    )
                ],
            )
            return failures

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

    async def prune(self, *, keep: int, max_age: float) -> None:
        """Retention: keep at most ``keep`` events per run and none older than ``max_age``
        seconds. Streams that asked for pruned events get a ``gap``, never a silent jump."""
        async with self._writing() as tx:
            await tx.rows("prune_by_count", keep=keep)
            await tx.rows("prune_by_age", age=max_age)
