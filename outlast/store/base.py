"""The store contract: what every backend (Postgres, SQLite) must do, and nothing more.

A run row is the durable identity of a piece of work; its event log is the ordered,
persisted view clients replay. Every write a worker makes is fenced by the run's lease
epoch, so a worker that lost its lease (it was presumed dead and its run was taken over)
can no longer change anything. The contract suite (tests/store_contract/, one module per
capability) runs against each implementation and fails when a method here goes untested.

Conventions of every method below:

- *Fenced* means the write names the run's ``Lease`` and changes something only while
  the row still has that worker and epoch and a leased status (running, cancelling), in
  the same statement or transaction as the write; otherwise it raises ``LeaseLost`` and
  writes nothing.
- *Notifies* lists the hub channels (store/hub.py) a write publishes, keyed by run id,
  after it commits (Postgres: ``NOTIFY`` delivered through the listener). A write that
  changes nothing notifies nobody.
- Events appended by the store get the run's next seqs, without holes; their payload keys
  are part of the contract (clients read them).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from outlast.store.ledger import LedgerContract
from outlast.store.outbox import OutboxContract
from outlast.store.records import (
    SYSTEM_ASSISTANT_NAMESPACE,
    Assistant,
    Claimant,
    Effect,
    Event,
    EventDraft,
    EventLender,
    HeldRun,
    Lease,
    LgRun,
    ListCursor,
    NewRun,
    Reaped,
    Run,
    Sealed,
    Thread,
    Wait,
    WaitSpec,
    same_request,
    system_assistant_id,
)
from outlast.vocabulary import RunStatus

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

    from outlast.store.hub import Hub

# The records live in store/records.py; every ``from outlast.store.base import …`` of
# them keeps working.
__all__ = [
    "SYSTEM_ASSISTANT_NAMESPACE",
    "Assistant",
    "Claimant",
    "Effect",
    "Event",
    "EventDraft",
    "EventLender",
    "HeldRun",
    "Lease",
    "LgRun",
    "ListCursor",
    "NewRun",
    "Reaped",
    "Run",
    "Sealed",
    "Store",
    "Thread",
    "Wait",
    "WaitSpec",
    "same_request",
    "system_assistant_id",
]


class Store(OutboxContract, LedgerContract, abc.ABC):
    """Backend-neutral operations. Implementations keep their SQL in ``store/sql/<backend>``.
    The outbox's part of the contract is in ``outbox.py``, the effects ledger's in
    ``ledger.py``."""

    hub: Hub
    backend: str

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (pools, the Postgres listener, the item store) without changing the
        schema; opening an open store does nothing. StoreUnavailable when it cannot."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release every connection; the store cannot be used again until ``open``."""

    @abc.abstractmethod
    async def migrate(self) -> list[str]:
        """Apply pending migrations (outlast's, the saver's, the item store's); returns
        the names applied, ``[]`` when up to date. Safe to run concurrently: several
        ``serve`` processes may start at once."""

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raise StoreUnavailable when the database does not answer (health checks)."""

    # Whether checkpoint writes can carry the run's pending events (``checkpointer``'s
    # ``events``): then a sink holds a step's events a moment for them.
    carries_events: bool = False

    @abc.abstractmethod
    def checkpointer(
        self, lease: Lease | None = None, events: EventLender | None = None
    ) -> BaseCheckpointSaver[Any]:
        """A LangGraph saver for one run over the shared connections; with a lease, its
        writes are fenced like every other worker write (where the backend can: Postgres;
        SQLite keeps checkpoints in another file, so no transaction covers both), and
        with ``events`` they append the run's pending events in their own transaction
        (where ``carries_events``). Without a lease (the API) it reads and deletes."""

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
        """Insert the run (``queued``, seq 1) and its ``run.created`` event (``status``,
        ``graph``, ``thread_id``) in one transaction, creating its thread. Notifies QUEUE.

        With ``new.claim_for``, the same transaction also claims the run for that worker
        (``running``, attempt 1, seq 2 ``run.started``) when it may start at once: no
        other run of its thread is queued, running, cancelling or waiting (checked under
        the thread's lock). Then nobody is notified and the returned run is the claimed
        one; otherwise it stays queued and QUEUE is notified as without it. The same
        holds for the other ways a run is created (``create_thread_run``,
        ``lg_create_run``).

        Returns ``(run, created)``. With an idempotency key already used by the same
        principal: the existing run and ``False`` (nothing written, nobody notified) when
        the fingerprint matches, else ``IdempotencyKeyReused``. Concurrent duplicates
        produce exactly one run.
        """

    @abc.abstractmethod
    async def get_run(self, run_id: str) -> Run | None:
        """The run, or None. Not filtered by principal: the API checks ownership."""

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
        row of the previous page (a keyset, so a page does not shift as runs arrive)."""

    @abc.abstractmethod
    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]:
        """Up to ``limit`` retained events with ``seq > after``, in seq order; ``[]`` for
        an unknown run. Pruned seqs are simply absent: callers compare the first seq
        they get with ``first_retained_seq`` to tell a gap."""

    @abc.abstractmethod
    async def first_retained_seq(self, run_id: str) -> int | None:
        """Lowest seq still stored for the run; None when nothing is retained."""

    @abc.abstractmethod
    async def prune_events(self, run_id: str, upto_seq: int) -> int:
        """Delete events with ``seq <= upto_seq`` (retention); returns how many. The
        run's ``last_seq`` stays, so later appends continue after the gap."""

    @abc.abstractmethod
    async def count_runs_by_status(self) -> dict[str, int]:
        """How many runs have each status (statuses with none are absent); read-only."""

    # -- the worker side -----------------------------------------------------------------

    @abc.abstractmethod
    async def claim(self, worker_id: str, ttl: float, limit: int) -> list[Run]:
        """Take up to ``limit`` queued runs, oldest first, in one statement; ``[]`` when
        none is claimable. Concurrent claims never take the same run.

        Each claimed run gets status ``running``, a new lease epoch, ``attempts + 1``, a
        lease that expires ``ttl`` seconds from now on database time (never a worker's
        clock), and a ``run.started`` event (``status``, ``attempt``, ``worker_id``).
        Only one run per thread is active at a time (a thread is one checkpoint
        lineage): a queued run waits while an earlier run of its thread is queued,
        running, cancelling or waiting. Notifies EVENTS.
        """

    @abc.abstractmethod
    async def renew(
        self, worker_id: str, ttl: float, run_ids: Sequence[str] | None = None
    ) -> list[HeldRun]:
        """Extend this worker's leases on ``run_ids`` (all of them when ``None``) to
        ``ttl`` from now; the runs not returned are no longer ours, and a returned
        ``cancelling`` status tells the worker to stop. A worker names the runs it is
        executing: a run it gave up on (its store failed under it) must expire and be
        reaped, not be kept alive by a worker that no longer runs it. No event, no
        notification: a renewal is not a transition."""

    @abc.abstractmethod
    async def append(self, lease: Lease, events: Sequence[EventDraft]) -> int:
        """Append events with the next seqs (no holes, one batch contiguous); returns the
        last seq. Fenced; ValueError for an empty batch. Notifies EVENTS."""

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
        """End the run in a terminal ``status`` with the caller's terminal ``event``,
        ``result`` and ``error``; returns the event's seq. Fenced. Drops the lease and
        the activity, and settles the run's waits (answered → resumed, open →
        withdrawn). Notifies EVENTS, STATUS, and QUEUE only when a run of the thread is
        queued behind it (that one may go now; nothing else became claimable)."""

    @abc.abstractmethod
    async def release(self, lease: Lease, reason: str) -> int:
        """Give the run back to the queue (graceful shutdown): ``queued`` with a
        ``run.released`` event (``status``, ``reason``), the attempt not counted, because
        the run stopped at a step boundary by request, not by failure. A run that was
        ``cancelling`` becomes ``cancelled`` instead (``run.cancelled``): its cancel was
        the last word; unless it owes work at its end (compensations, a rollback): then
        it stays ``cancelling`` with no worker and its ending recorded. Fenced; bumps the
        epoch. Notifies EVENTS, QUEUE, STATUS (``store/transitions.py:release``)."""

    @abc.abstractmethod
    async def request_cancel(
        self, run_id: str, reason: str, *, rollback: bool = False
    ) -> Run | None:
        """Cancel a run: queued or waiting → ``cancelled`` at once (``run.cancelled``,
        its waits withdrawn); running → ``cancelling`` (``run.cancelling``; its worker
        sees it on renew or by CONTROL and ends it); both payloads ``status``,
        ``reason``. A queued or waiting run that owes work at its end (compensations,
        a rollback) is ``cancelling`` with no worker and its ending recorded instead,
        its waits withdrawn: the claim hands it to a worker. Notifies EVENTS, CONTROL,
        QUEUE, STATUS. A terminal or cancelling run is returned unchanged and nobody is
        notified; None if unknown (``store/transitions.py:cancel`` decides).

        ``rollback``: the thread goes back to where it was before the run, done by the
        worker that ends it (after the compensations, fenced by its lease), recorded in
        the run's ``error`` (and ending) in this transaction; a run never claimed wrote
        nothing and is cancelled at once. The run's LangGraph runs are hidden in the same
        transaction, also when it has ended already (then nothing else changes)."""

    @abc.abstractmethod
    async def reap(self, limit: int = 100) -> list[Reaped]:
        """Up to ``limit`` runs whose worker lease expired (on database time), each in
        its own new epoch so the lost worker is fenced: ``queued`` again
        (``run.requeued``; the attempt counts at the next claim), ``failed`` after
        ``max_attempts`` (``run.failed``, error ``worker_lost``), or ``cancelled`` if it
        was cancelling (``run.cancelled``); payload ``status``, ``reason``, ``attempts``.
        A run that owes work at its end (compensations, a rollback) goes back to a worker
        whatever its attempts, its ending recorded (``run.requeued``, ``queued`` or
        ``cancelling`` with no worker). Notifies EVENTS, QUEUE, STATUS for each
        (``store/transitions.py:reap``)."""

    # -- waits, signals, threads, retention (implemented once in store/common.py) --------

    @abc.abstractmethod
    async def park(
        self,
        lease: Lease,
        specs: Sequence[WaitSpec],
        lookback: float,
        events: Sequence[EventDraft] = (),
    ) -> RunStatus:
        """Record the waits of a run that stopped at interrupts and release it (fenced;
        the attempt is given back, the epoch bumped). Returns the status it ended in:
        ``waiting`` (``run.waiting``: ``status``, ``waits``, ``kinds``), ``queued`` at
        once when an answer is already there (``run.queued``; an event wait whose key was
        signalled within ``lookback`` seconds is answered here), or ``cancelled`` when
        the run was cancelling. ``events`` (the stream parts that show the interrupts)
        are appended in the same transaction, before each new wait's ``wait.started``
        (``wait``: ``Wait.public()``): a client that sees an interrupt can answer it at
        once, because its wait exists by then. A wait still pending from before (same
        interrupt id) is kept, not duplicated; answers the graph consumed become
        ``resumed``. Notifies EVENTS, STATUS; QUEUE unless waiting; WAITS when a spec has
        a wake time (wakers re-plan their nap)."""

    @abc.abstractmethod
    async def answer(
        self, run_id: str, wait_id: str, value: Any, how: str = "input", key: str | None = None
    ) -> tuple[Wait, bool]:
        """Answer an open wait and requeue its run if it is waiting: ``wait.ended``
        (``wait_id``, ``kind``, ``how``, ``value``; an auth value is redacted) and
        ``run.queued``; notifies EVENTS, and QUEUE and STATUS when requeued. Of
        concurrent answers exactly one lands. WaitNotFound for a wait not of this run,
        WaitNotOpen when already answered. With the ``key`` of an answer already given,
        the same answer again is a replay: ``(wait, False)``, nothing written; another
        value under that key is IdempotencyKeyReused."""

    @abc.abstractmethod
    async def get_wait(self, run_id: str, wait_id: str) -> Wait:
        """The wait; WaitNotFound unless it is this run's."""

    @abc.abstractmethod
    async def list_waits(self, run_id: str, status: str | None = None) -> list[Wait]:
        """The run's waits (of one ``WaitStatus`` if given), oldest first."""

    @abc.abstractmethod
    async def open_waits(self, run_ids: Sequence[str]) -> dict[str, list[Wait]]:
        """The open waits of each of ``run_ids`` (runs without one are absent), in one read:
        a listing asks once per page, never once per row."""

    @abc.abstractmethod
    async def signal(self, key: str, payload: Any, principal: str = "") -> list[str]:
        """Store the signal (for the lookback of waits parked later), then answer every
        open event wait on ``key`` of the sender's runs, as ``answer`` does with
        ``how="signal"`` and value ``{"key", "payload"}``; returns the runs woken,
        ``[]`` when none waits. Another principal's runs never see it."""

    @abc.abstractmethod
    async def get_run_by_key(self, principal: str, key: str) -> Run | None:
        """The run accepted with this idempotency key, if any."""

    @abc.abstractmethod
    async def count_active(self, principal: str) -> int:
        """Runs of ``principal`` that hold or wait for a worker (queued, running,
        cancelling): what the in-flight limit counts. Waiting runs hold nothing."""

    @abc.abstractmethod
    async def due_waits(self, limit: int, hold: float) -> list[Wait]:
        """Claim up to ``limit`` open waits whose wake time has come (timers, deadlines,
        probes), pushing their wake time ``hold`` seconds ahead so that no other waker
        takes them meanwhile; a waker that dies lets them come due again."""

    @abc.abstractmethod
    async def next_due_in(self) -> float | None:
        """Seconds until the earliest open wait is due (negative when overdue), None when
        no open wait has a wake time: how long a waker may nap."""

    @abc.abstractmethod
    async def wake(self, wait: Wait, value: Any, how: str) -> bool:
        """End a due wait by itself (timer, deadline, probe result) as ``answer`` does;
        False, writing nothing, if it was answered meanwhile."""

    @abc.abstractmethod
    async def probe_ok(self, wait: Wait, every: float, detail: Any) -> None:
        """An external wait's probe says it is still pending: renew the wait's lease for
        ``2 * every``, next probe in ``every``, failures reset; ``wait.renewed``
        (``wait_id``, ``renewals``, ``detail``, ``lease_expires_at``), notifies EVENTS.
        Nothing when the wait is no longer open."""

    @abc.abstractmethod
    async def probe_failed(self, wait: Wait, every: float, error: str) -> int:
        """A probe failed: count it, retry in ``every``; ``wait.probe_failed``
        (``wait_id``, ``failures``, ``error``), notifies EVENTS. Returns the failures so
        far, 0 (nothing written) when the wait is no longer open."""

    @abc.abstractmethod
    async def create_thread_run(self, new: NewRun, *, if_busy: str) -> tuple[Run, bool]:
        """``create_run`` on a thread, refused with ThreadBusy while another run of the
        thread is active, unless ``if_busy == "enqueue"``; the check and the insert are
        one transaction, serialized per thread, so two clients cannot both see it idle."""

    @abc.abstractmethod
    async def latest_run(self, thread_id: str) -> Run | None:
        """The thread's most recently accepted run, or None."""

    @abc.abstractmethod
    async def prune(self, *, keep: int, max_age: float) -> None:
        """Retention: keep at most ``keep`` events per run and none older than ``max_age``
        seconds. Streams that asked for pruned events get a ``gap``, never a silent jump.
        No event, no notification."""

    @abc.abstractmethod
    async def set_activity(
        self, lease: Lease, activity: dict[str, Any] | None, usage: dict[str, Any] | None = None
    ) -> None:
        """Record what the run does now and, when given, its budget usage (``None``
        keeps the stored usage). Fenced; no event (the worker appends ``activity``
        itself) and no notification: it is polled, and too frequent to wake anyone."""

    @abc.abstractmethod
    async def set_supervision(self, lease: Lease, supervision: dict[str, Any]) -> None:
        """Record what the supervisor remembers about the run between attempts (fenced)."""

    @abc.abstractmethod
    async def apply_budget(
        self, lease: Lease, budget: dict[str, Any], consumed_wait: str | None
    ) -> None:
        """New limits (a tranche granted by a person) and the budget wait that granted
        them, consumed (answered → resumed) in the same transaction so a tranche is never
        applied twice. Fenced; no event, no notification."""

    # -- secrets at rest ----------------------------------------------------------------

    @abc.abstractmethod
    async def sealed_secrets(self) -> list[Sealed]:
        """Every ciphertext the store holds (``outlast secrets check`` opens each)."""

    @abc.abstractmethod
    async def reseal(self, item: Sealed, sealed: str) -> bool:
        """Replace ``item``'s ciphertext with ``sealed`` (a rotation); False, and nothing
        written, if it is no longer the one that was read."""

    # -- the LangGraph face: assistants (store/assistants.py) ------------------------------
    # User assistants only (system assistants are not stored), each visible to its
    # principal alone. Mutators raise AssistantNotFound (store/assistants.py) when the
    # principal has no such assistant. None of them appends events or notifies.

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
    async def get_assistant(self, assistant_id: str, principal: str = "") -> Assistant | None:
        """The principal's assistant, or None (also when another principal owns it)."""

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
        ``name``: case-insensitive substring; ties sorted by id ascending. ValueError
        for a ``sort_by`` outside ``SORT_FIELDS`` (the query knows only those)."""

    @abc.abstractmethod
    async def count_assistants(
        self,
        *,
        principal: str = "",
        metadata: dict[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
    ) -> int:
        """How many of the principal's assistants match, as ``search_assistants``."""

    @abc.abstractmethod
    async def update_assistant(
        self, assistant_id: str, changes: dict[str, Any], *, principal: str = ""
    ) -> Assistant:
        """A new current version (highest + 1, so a version once made is never reused):
        given fields replace, metadata merges. ValueError for a field not updatable."""

    @abc.abstractmethod
    async def delete_assistant(self, assistant_id: str, *, principal: str = "") -> None:
        """Delete the assistant and all its versions."""

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
        """Copy a stored version back as the current fields (no new version);
        AssistantNotFound for an unknown version too."""

    # -- the LangGraph face: threads and LangGraph runs (store/lgthreads.py) ---------------

    @abc.abstractmethod
    async def lg_create_thread(
        self, thread_id: str, principal: str, metadata: dict[str, Any]
    ) -> tuple[Thread, bool]:
        """``(thread, True)``, or the existing thread and ``False`` (whoever owns it: the
        API checks the owner). No event, no notification."""

    @abc.abstractmethod
    async def lg_threads(
        self,
        *,
        thread_id: str | None = None,
        principal: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[Thread]:
        """Threads with their latest run and whether it asks a client for something,
        newest first; ``metadata`` is JSON containment (Postgres' ``@>``)."""

    @abc.abstractmethod
    async def lg_set_thread_metadata(self, thread_id: str, patch: dict[str, Any]) -> Thread | None:
        """Merge ``patch`` into the thread's metadata (one transaction); None if unknown."""

    @abc.abstractmethod
    async def lg_delete_thread(self, thread_id: str) -> bool:
        """Delete the thread, its runs and their logs; False if unknown. A worker
        executing one of its runs loses its lease with the row; CONTROL is notified for
        each active run so it looks at once. Checkpoints are the saver's: the caller
        deletes them."""

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
        (``reject`` → ThreadBusy, ``interrupt``/``rollback`` → cancelled as
        ``request_cancel`` does, rollback also hiding its LangGraph runs, ``enqueue`` →
        the new run queues behind it); a run that asks a client for something (a
        LangGraph interrupt) is superseded (cancelled, error type ``superseded``) by new
        input whatever the strategy. The thread's metadata gets ``graph_id`` and
        ``assistant_id``. Notifies as ``create_run`` and ``request_cancel``. An
        idempotency key already used returns that run and ``False``, touching nothing."""

    @abc.abstractmethod
    async def lg_resume(
        self, run_id: str, answers: dict[str, Any], lg: LgRun
    ) -> tuple[LgRun, bool]:
        """Answer the waits ``answers`` (wait id → value) of a waiting run, as
        ``answer`` with ``how="resume"``, and open the LangGraph run that continues its
        log after the current last seq, in one transaction: every answer lands or none
        (WaitNotOpen when one was answered already: two concurrent resumes give one
        resume and one refusal). ``lg``'s idempotency key seen again with the same
        kwargs returns that LangGraph run and ``False``."""

    @abc.abstractmethod
    async def lg_get_run(self, lg_id: str) -> LgRun | None:
        """The LangGraph run (deleted ones included: the caller hides them), or None."""

    @abc.abstractmethod
    async def lg_runs_of_thread(self, thread_id: str) -> list[LgRun]:
        """Newest first; runs made through ``/v1`` appear as their own LangGraph run."""

    @abc.abstractmethod
    async def lg_runs_of_run(self, run_id: str) -> list[LgRun]:
        """The LangGraph runs that are stretches of one outlast run, oldest first."""

    @abc.abstractmethod
    async def lg_delete_runs_of(self, run_id: str) -> None:
        """Hide every LangGraph run of an outlast run (cancelled with ``rollback``)."""
