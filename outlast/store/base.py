"""The store contract: what every backend (Postgres, SQLite) must do, and nothing more.

A run row is the durable identity of a piece of work; its event log is the ordered,
persisted view clients replay. Every write a worker makes is fenced by the run's lease
epoch, so a worker that lost its lease (it was presumed dead and its run was taken over)
can no longer change anything. The same conformance suite (tests/test_store_contract.py)
runs against each implementation.
"""

from __future__ import annotations

import abc
import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from outlast.vocabulary import TERMINAL, TERMINAL_EVENTS, RunStatus

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from outlast.store.hub import Hub


@dataclass(frozen=True, slots=True)
class NewRun:
    id: str
    thread_id: str
    graph: str
    input: Any
    config: dict[str, Any]
    metadata: dict[str, Any]
    budget: dict[str, Any] | None
    idempotency_key: str | None
    fingerprint: str
    max_attempts: int
    principal: str = ""
    # What a LangGraph request sets beyond the native fields (runtime/options.py).
    options: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Run:
    id: str
    pos: int
    principal: str
    thread_id: str
    graph: str
    status: RunStatus
    input: Any
    config: dict[str, Any]
    metadata: dict[str, Any]
    budget: dict[str, Any] | None
    idempotency_key: str | None
    fingerprint: str
    attempts: int
    max_attempts: int
    worker_id: str | None
    lease_epoch: int
    lease_expires_at: dt.datetime | None
    last_seq: int
    result: Any
    error: dict[str, Any] | None
    created_at: dt.datetime
    updated_at: dt.datetime
    activity: dict[str, Any] | None = None
    usage: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    # the supervisor's memory of this run (runtime/policy.py), never shown to clients
    supervision: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True, slots=True)
class Event:
    run_id: str
    seq: int
    type: str
    data: dict[str, Any]
    time: dt.datetime

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_EVENTS


@dataclass(frozen=True, slots=True)
class EventDraft:
    """An event before the store gives it its seq."""

    type: str
    data: dict[str, Any]


class EventLender(Protocol):
    """A run's event sink, as a checkpoint write sees it: it may borrow the pending
    events and append them in its own transaction (``Store.carries_events``)."""

    def lend(self) -> list[EventDraft] | None: ...

    def settle(self, batch: list[EventDraft], seq: int | None) -> None: ...


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof that a worker holds a run. Every worker write presents it; the store checks
    ``worker_id`` and ``epoch`` against the row, in the same statement as the write."""

    run_id: str
    worker_id: str
    epoch: int


@dataclass(frozen=True, slots=True)
class HeldRun:
    """One row of a lease renewal: the run is still ours, and its current status."""

    run_id: str
    epoch: int
    status: RunStatus


@dataclass(frozen=True, slots=True)
class Reaped:
    run_id: str
    status: RunStatus
    seq: int


@dataclass(frozen=True, slots=True)
class WaitSpec:
    """A wait as the runtime derives it from a pending interrupt, before it is stored.

    ``wake_at`` (absolute) or ``wake_in`` (seconds from now, on database time) is when
    the wait wakes by itself: a timer fires, a deadline gives the default answer, an
    external wait is probed.
    """

    interrupt_id: str
    kind: str
    object: Any = None
    prompt: Any = None
    schema: dict[str, Any] | None = None
    event_keys: list[str] | None = None
    wake_at: dt.datetime | None = None
    wake_in: float | None = None
    has_default: bool = False
    default: Any = None
    probe: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Wait:
    id: str
    run_id: str
    interrupt_id: str
    kind: str
    status: str  # open | answered | resumed | withdrawn
    object: Any
    prompt: Any
    schema: dict[str, Any] | None
    event_keys: list[str] | None
    has_default: bool
    default: Any
    probe: dict[str, Any] | None
    answer: Any
    answered_how: str | None
    since: dt.datetime
    last_signal_at: dt.datetime | None
    lease_expires_at: dt.datetime | None
    wake_at: dt.datetime | None
    renewals: int
    failures: int
    answered_at: dt.datetime | None
    answer_key: str | None = None

    def public(self) -> dict[str, Any]:
        """The shape clients see in snapshots and ``wait.started`` events."""
        return {
            "id": self.id,
            "kind": self.kind,
            "object": self.object,
            "since": self.since.isoformat(),
            "last_signal_at": self.last_signal_at.isoformat() if self.last_signal_at else None,
            "lease_expires_at": (
                self.lease_expires_at.isoformat() if self.lease_expires_at else None
            ),
            "renewals": self.renewals,
            "prompt": self.prompt,
            "schema": self.schema,
            "status": self.status,
            "deadline": self.wake_at.isoformat()
            if self.wake_at and self.kind != "external"
            else None,
        }


def same_request(new: NewRun, existing: Run) -> Run:
    """An idempotency key seen again: the same run if the request is the same, else refuse."""
    from outlast.errors import IdempotencyKeyReused

    if existing.fingerprint != new.fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency-Key {new.idempotency_key!r} was used for run {existing.id} "
            "with a different request body"
        )
    return existing


@dataclass(frozen=True, slots=True)
class Effect:
    """One side effect in the ledger: ``started`` is committed before the call leaves the
    process, ``done`` with its result after it returns."""

    run_id: str
    key: str
    tool: str
    args_hash: str
    args: Any
    idempotent: bool
    status: str  # started | done | failed | unknown
    result: Any
    error: str | None
    started_at: dt.datetime
    finished_at: dt.datetime | None
    calls: int

    def public(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "tool": self.tool,
            "args": self.args,
            "args_hash": self.args_hash,
            "idempotent": self.idempotent,
            "status": self.status,
            "result": self.result,
            "error": self.error,
            "calls": self.calls,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


# LangGraph's namespace for the ids of system assistants: uuid5(namespace, graph_id).
SYSTEM_ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")


def system_assistant_id(graph_id: str) -> str:
    """The id LangGraph gives the system assistant of a graph (``agent`` →
    ``fe096781-5601-53d2-b2f6-0d3403f7e9ca``), so clients that hard-code it work."""
    return str(uuid.uuid5(SYSTEM_ASSISTANT_NAMESPACE, graph_id))


@dataclass(frozen=True, slots=True)
class Assistant:
    """A LangGraph assistant: a graph with a configuration. System assistants (one per
    graph, id ``uuid5(namespace, graph_id)``) are not stored; user assistants are, with
    their versions."""

    assistant_id: str
    graph_id: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]
    version: int
    created_at: dt.datetime
    updated_at: dt.datetime
    principal: str = ""


@dataclass(frozen=True, slots=True)
class Thread:
    """A thread as an entity (it exists before its first run), with what its status is
    derived from: its latest run, and whether that run asks a client for something."""

    thread_id: str
    principal: str
    metadata: dict[str, Any]
    created_at: dt.datetime
    updated_at: dt.datetime
    run_id: str | None = None
    run_status: RunStatus | None = None
    run_graph: str | None = None
    run_error: dict[str, Any] | None = None
    asking: bool = False


@dataclass(frozen=True, slots=True)
class LgRun:
    """A LangGraph run: a stretch of one outlast run's log, the events after ``from_seq``
    up to the next time the run asks a client for something (or ends). The first has the
    outlast run's id; a resume is a new one on the same outlast run."""

    id: str
    run_id: str
    thread_id: str
    principal: str
    assistant_id: str
    from_seq: int
    kwargs: dict[str, Any]
    metadata: dict[str, Any]
    multitask_strategy: str
    created_at: dt.datetime
    idempotency_key: str | None = None
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class ListCursor:
    """Keyset position: runs accepted before the one at ``pos``."""

    pos: int


class Store(abc.ABC):
    """Backend-neutral operations. Implementations keep their SQL in ``store/sql/<backend>``."""

    hub: Hub
    backend: str

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (pools, listener) without changing the schema."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def migrate(self) -> list[str]:
        """Apply pending migrations; returns the names applied. Safe to run concurrently."""

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raise StoreUnavailable when the database does not answer."""

    # Whether checkpoint writes can carry the run's pending events (``checkpointer``'s
    # ``events``): then a sink holds a step's events a moment for them.
    carries_events: bool = False

    @abc.abstractmethod
    def checkpointer(
        self, lease: Lease | None = None, events: EventLender | None = None
    ) -> BaseCheckpointSaver[Any]:
        """A LangGraph saver for one run over the shared connections; with a lease, its
        writes are fenced like every other worker write (where the backend can), and
        with ``events`` they append the run's pending events in their own transaction
        (where ``carries_events``)."""

    # LangGraph's own item store (store/items.py), opened by ``open()``; set by backends.
    _items: BaseStore | None = None

    @property
    def items(self) -> BaseStore:
        """The ``/store`` items and a graph's ``store``, for every principal at once: hand
        out ``outlast.store.items.for_principal(store.items, principal)``, not this."""
        if self._items is None:
            raise RuntimeError(f"{type(self).__name__}.open() was not called (no item store)")
        return self._items

    # -- acceptance and reads ------------------------------------------------------------

    @abc.abstractmethod
    async def create_run(self, new: NewRun) -> tuple[Run, bool]:
        """Insert the run and its ``run.created`` event in one transaction.

        Returns ``(run, created)``. With an idempotency key already used by the same
        principal: the existing run and ``False`` when the fingerprint matches, else
        ``IdempotencyKeyReused``. Concurrent duplicates produce exactly one run.
        """

    @abc.abstractmethod
    async def get_run(self, run_id: str) -> Run | None: ...

    @abc.abstractmethod
    async def list_runs(
        self,
        *,
        thread_id: str | None,
        status: RunStatus | None,
        limit: int,
        before: ListCursor | None,
        principal: str = "",
    ) -> list[Run]:
        """The principal's runs, newest first; ``before`` is the keyset cursor of the last
        row of the previous page."""

    @abc.abstractmethod
    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]: ...

    @abc.abstractmethod
    async def first_retained_seq(self, run_id: str) -> int | None:
        """Lowest seq still stored for the run; None when nothing is retained."""

    @abc.abstractmethod
    async def prune_events(self, run_id: str, upto_seq: int) -> int:
        """Delete events with ``seq <= upto_seq`` (retention); returns how many."""

    @abc.abstractmethod
    async def count_runs_by_status(self) -> dict[str, int]:
        """How many runs have each status (statuses with none are absent); read-only."""

    # -- the worker side -----------------------------------------------------------------

    @abc.abstractmethod
    async def claim(self, worker_id: str, ttl: float, limit: int) -> list[Run]:
        """Take up to ``limit`` queued runs, oldest first, in one statement.

        Each claimed run gets status ``running``, a new lease epoch, ``attempts + 1``, a
        lease that expires ``ttl`` seconds from now on database time, and a ``run.started``
        event.
        """

    @abc.abstractmethod
    async def renew(
        self, worker_id: str, ttl: float, run_ids: Sequence[str] | None = None
    ) -> list[HeldRun]:
        """Extend this worker's leases on ``run_ids`` (all of them when ``None``); the
        runs not returned are no longer ours. A worker names the runs it is executing: a
        run it gave up on (its store failed under it) must expire and be reaped, not be
        kept alive by a worker that no longer runs it."""

    @abc.abstractmethod
    async def append(self, lease: Lease, events: Sequence[EventDraft]) -> int:
        """Append events with the next seqs (no holes); returns the last seq.

        Raises LeaseLost when the lease's epoch or worker no longer matches the row.
        """

    @abc.abstractmethod
    async def finish(
        self,
        lease: Lease,
        status: RunStatus,
        event: EventDraft,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
    ) -> int:
        """End the run (terminal status) with its terminal event; fenced like ``append``."""

    @abc.abstractmethod
    async def release(self, lease: Lease, reason: str) -> int:
        """Give the run back to the queue (graceful shutdown). The attempt is not counted,
        because the run stopped at a step boundary by request, not by failure."""

    @abc.abstractmethod
    async def request_cancel(self, run_id: str, reason: str) -> Run | None:
        """Cancel a run: queued → cancelled at once; running → cancelling (its worker is
        notified and ends it); terminal or cancelling → unchanged. None if unknown."""

    @abc.abstractmethod
    async def reap(self, limit: int = 100) -> list[Reaped]:
        """Runs whose worker lease expired: requeue (attempt + 1 at next claim), or fail
        after ``max_attempts``; a run that was cancelling becomes cancelled."""

    # -- waits, signals, threads, retention (implemented once in store/waits.py) ---------

    @abc.abstractmethod
    async def park(
        self,
        lease: Lease,
        specs: Sequence[WaitSpec],
        lookback: float,
        events: Sequence[EventDraft] = (),
    ) -> RunStatus:
        """Record the waits of a run that stopped at interrupts and release it (fenced):
        ``waiting``, or ``queued`` at once when an answer is already there. ``events``
        (the stream parts that show the interrupts) are appended in the same
        transaction, before ``wait.started``: a client that sees an interrupt can answer
        it at once, because its wait exists by then."""

    @abc.abstractmethod
    async def answer(
        self, run_id: str, wait_id: str, value: Any, how: str = "input", key: str | None = None
    ) -> tuple[Wait, bool]:
        """Answer an open wait (WaitNotFound, WaitNotOpen) and requeue its run. With the
        ``key`` of an answer already given, the same answer again is a replay: returns
        ``(wait, False)``; another value under that key is IdempotencyKeyReused."""

    @abc.abstractmethod
    async def get_wait(self, run_id: str, wait_id: str) -> Wait: ...

    @abc.abstractmethod
    async def list_waits(self, run_id: str, status: str | None = None) -> list[Wait]: ...

    @abc.abstractmethod
    async def signal(self, key: str, payload: Any, principal: str = "") -> list[str]: ...

    @abc.abstractmethod
    async def get_run_by_key(self, principal: str, key: str) -> Run | None:
        """The run accepted with this idempotency key, if any."""

    @abc.abstractmethod
    async def count_active(self, principal: str) -> int:
        """Runs of ``principal`` that hold or wait for a worker (queued, running,
        cancelling): what the in-flight limit counts. Waiting runs hold nothing."""

    @abc.abstractmethod
    async def due_waits(self, limit: int, hold: float) -> list[Wait]: ...

    @abc.abstractmethod
    async def next_due_in(self) -> float | None: ...

    @abc.abstractmethod
    async def wake(self, wait: Wait, value: Any, how: str) -> bool: ...

    @abc.abstractmethod
    async def probe_ok(self, wait: Wait, every: float, detail: Any) -> None: ...

    @abc.abstractmethod
    async def probe_failed(self, wait: Wait, every: float, error: str) -> int: ...

    @abc.abstractmethod
    async def create_thread_run(self, new: NewRun, *, if_busy: str) -> tuple[Run, bool]: ...

    @abc.abstractmethod
    async def latest_run(self, thread_id: str) -> Run | None: ...

    @abc.abstractmethod
    async def prune(self, *, keep: int, max_age: float) -> None: ...

    @abc.abstractmethod
    async def set_activity(
        self, lease: Lease, activity: dict[str, Any] | None, usage: dict[str, Any] | None = None
    ) -> None:
        """Record what the run does now and, when given, its budget usage (fenced)."""

    @abc.abstractmethod
    async def set_supervision(self, lease: Lease, supervision: dict[str, Any]) -> None:
        """Record what the supervisor remembers about the run between attempts (fenced)."""

    @abc.abstractmethod
    async def apply_budget(
        self, lease: Lease, budget: dict[str, Any], consumed_wait: str | None
    ) -> None:
        """New limits (a tranche granted by a person) and the budget wait that granted
        them, consumed in the same transaction so a tranche is never applied twice."""

    # -- the effects ledger ----------------------------------------------------------------

    @abc.abstractmethod
    async def effect_begin(
        self, run_id: str, key: str, tool: str, args_hash: str, args: Any, idempotent: bool
    ) -> tuple[Effect, bool]:
        """Record ``started`` (committed before the call); ``(existing, False)`` when the
        key is already in the ledger."""

    @abc.abstractmethod
    async def effect_retry(self, run_id: str, key: str) -> Effect: ...

    @abc.abstractmethod
    async def effect_finish(
        self, run_id: str, key: str, status: str, result: Any = None, error: str | None = None
    ) -> Effect: ...

    @abc.abstractmethod
    async def list_effects(self, run_id: str) -> list[Effect]: ...

    # -- the LangGraph face: assistants (store/assistants.py) ------------------------------
    # User assistants only (system assistants are not stored), each visible to its
    # principal alone. Mutators raise AssistantNotFound (store/assistants.py) when the
    # principal has no such assistant.

    @abc.abstractmethod
    async def create_assistant(
        self,
        *,
        assistant_id: str,
        graph_id: str,
        name: str,
        description: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: str = "raise",
        principal: str = "",
    ) -> tuple[Assistant, bool]:
        """Insert it with its version 1; ``(assistant, created)``. A taken id is
        AssistantExists, unless ``if_exists == "do_nothing"`` and it is the caller's
        (returned unchanged). Concurrent creates of one id make one assistant."""

    @abc.abstractmethod
    async def get_assistant(self, assistant_id: str, principal: str = "") -> Assistant | None: ...

    @abc.abstractmethod
    async def search_assistants(
        self,
        *,
        principal: str = "",
        metadata: dict[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> tuple[list[Assistant], int]:
        """A page and the total count. ``metadata``: each key has exactly that value;
        ``name``: case-insensitive substring; ties sorted by id ascending."""

    @abc.abstractmethod
    async def count_assistants(
        self,
        *,
        principal: str = "",
        metadata: dict[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
    ) -> int: ...

    @abc.abstractmethod
    async def update_assistant(
        self, assistant_id: str, changes: dict[str, Any], *, principal: str = ""
    ) -> Assistant:
        """A new current version (highest + 1): given fields replace, metadata merges."""

    @abc.abstractmethod
    async def delete_assistant(self, assistant_id: str, *, principal: str = "") -> None: ...

    @abc.abstractmethod
    async def list_assistant_versions(
        self,
        assistant_id: str,
        *,
        principal: str = "",
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Assistant]:
        """Newest first; a version's ``updated_at`` is its ``created_at``."""

    @abc.abstractmethod
    async def set_latest_assistant_version(
        self, assistant_id: str, version: int, *, principal: str = ""
    ) -> Assistant:
        """Copy a stored version back as the current fields (no new version)."""

    # -- the LangGraph face: threads and LangGraph runs (store/lgthreads.py) ---------------

    @abc.abstractmethod
    async def lg_create_thread(
        self, thread_id: str, principal: str, metadata: dict[str, Any]
    ) -> tuple[Thread, bool]:
        """``(thread, True)``, or the existing thread and ``False`` (whoever owns it)."""

    @abc.abstractmethod
    async def lg_threads(
        self,
        *,
        thread_id: str | None = None,
        principal: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Thread]:
        """Threads with their latest run, newest first; ``metadata`` is containment."""

    @abc.abstractmethod
    async def lg_set_thread_metadata(self, thread_id: str, patch: dict[str, Any]) -> Thread | None:
        """Merge ``patch`` into the thread's metadata (one transaction)."""

    @abc.abstractmethod
    async def lg_delete_thread(self, thread_id: str) -> bool:
        """Cancel its active runs' work and delete the thread, its runs and their logs
        (checkpoints are the saver's: the caller deletes them)."""

    @abc.abstractmethod
    async def lg_expire_temporary(self, age: float) -> list[str]:
        """Delete temporary threads (stateless runs with ``on_completion=delete``) whose
        runs all ended more than ``age`` seconds ago, with their runs; returns their ids
        (the caller deletes their checkpoints)."""

    @abc.abstractmethod
    async def lg_create_run(
        self,
        new: NewRun,
        lg: LgRun,
        *,
        strategy: str,
        supersede_reason: str,
        temporary: bool = False,
    ) -> tuple[LgRun, Run, bool]:
        """A new outlast run on a thread and its first LangGraph run, in one transaction
        serialized per thread. An active run of the thread is handled by ``strategy``
        (``reject`` → ThreadBusy, ``interrupt``/``rollback`` → cancelled, ``enqueue`` →
        the new run queues behind it); a run that asks a client for something (a
        LangGraph interrupt) is superseded (cancelled) by new input whatever the strategy.
        An idempotency key already used returns that run and ``False``, touching nothing."""

    @abc.abstractmethod
    async def lg_resume(
        self, run_id: str, answers: dict[str, Any], lg: LgRun
    ) -> tuple[LgRun, bool]:
        """Answer the waits ``answers`` (wait id → value) of a waiting run and open the
        LangGraph run that continues its log, in one transaction: every answer lands or
        none (WaitNotOpen when one was answered already: two concurrent resumes give one
        resume and one refusal)."""

    @abc.abstractmethod
    async def lg_get_run(self, lg_id: str) -> LgRun | None: ...

    @abc.abstractmethod
    async def lg_runs_of_thread(self, thread_id: str) -> list[LgRun]:
        """Newest first; runs made through ``/v1`` appear as their own LangGraph run."""

    @abc.abstractmethod
    async def lg_runs_of_run(self, run_id: str) -> list[LgRun]:
        """The LangGraph runs that are stretches of one outlast run, oldest first."""

    @abc.abstractmethod
    async def lg_delete_runs_of(self, run_id: str) -> None:
        """Hide every LangGraph run of an outlast run (cancelled with ``rollback``)."""
