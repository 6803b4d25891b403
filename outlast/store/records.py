"""The records the store hands out and takes in: frozen dataclasses, backend-neutral.

They are what ``Store`` (store/base.py, which re-exports them) speaks; the API turns them
into its pydantic models at the edge.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

from outlast.store.outbox import NewWebhook
from outlast.vocabulary import TERMINAL, TERMINAL_EVENTS, RunStatus, WaitKind


@dataclass(frozen=True, slots=True)
class Claimant:
    """A worker that takes a run as it is accepted (eager start, ``runtime/eager.py``):
    the store claims the new run for it in the acceptance transaction when the run may
    start at once, with this lease."""

    worker_id: str
    ttl: float


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
    # Set by the accepting process only: not part of what the client asked for.
    claim_for: Claimant | None = None
    # Subscriptions to this run only, inserted with it (LangGraph's per-run `webhook`).
    webhooks: tuple[NewWebhook, ...] = ()
    # The metadata of the thread this run makes, when it makes one (the app's auth.py
    # stamps an owner on it); an existing thread keeps its own.
    thread_metadata: dict[str, Any] = field(default_factory=dict)
    # The principal its thread must belong to, when the thread exists already: the run's
    # own (None), or the owner of a thread the app's auth.py shares with it. The insert
    # refuses any other (``ThreadUnavailable``), whatever its caller checked first.
    thread_owner: str | None = None

    @property
    def expected_owner(self) -> str:
        return self.principal if self.thread_owner is None else self.thread_owner


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
    # how it ends once its compensations are done ({"status", "error"}; store/contract/effects.py)
    ending: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def has_history(self) -> bool:
        """Whether the run was claimed before, drained or parked on a wait: a first claim
        writes exactly two events (``run.created`` at acceptance, ``run.started`` at the
        claim), so a longer log means an earlier attempt happened, and the run's thread
        holds its checkpoints (and maybe its waits). The log's length is kept through
        retention (``last_seq``), so this holds for a pruned log too."""
        return self.last_seq > FIRST_CLAIM_EVENTS


# run.created and run.started: the log of a run claimed for the first time
FIRST_CLAIM_EVENTS = 2


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
    """An event before the store gives it its seq. ``encoded``: ``data`` as the store
    writes it (``rows.dumps``), when the sink has encoded it already to weigh it, so that
    the store does not encode it a second time."""

    type: str
    data: dict[str, Any]
    encoded: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Lent:
    """A batch of a run's pending events lent to a checkpoint write, with its token: the
    batch's identity, which the store records with the append, so that the same batch
    sent again after a write whose outcome is unknown is not appended twice."""

    events: list[EventDraft]
    token: str


class EventLender(Protocol):
    """A run's event sink, as a checkpoint write sees it: it may borrow the pending
    events and append them in its own transaction (``Store.carries_events``)."""

    def lend(self) -> Lent | None: ...

    def settle(self, lent: Lent, seq: int | None) -> None: ...


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
    # what the interrupt asked, as LangGraph's clients see it (``interrupt(value)``); None
    # for the runtime's own waits, which no interrupt of the graph raised
    value: Any = None


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
            if self.wake_at and self.kind != WaitKind.EXTERNAL
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


def thread_refused(thread_id: str) -> Exception:
    """What a run insert refused for its thread says: nothing about whose it is or what
    it holds."""
    from outlast.errors import ThreadUnavailable

    return ThreadUnavailable(f"thread_id {thread_id!r} cannot be used; choose another")


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
    compensate: str | None = None  # the import path of what undoes it
    compensates: str | None = None  # on an undoing: the key of the effect it undoes

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
            "compensable": self.compensate is not None,
            "compensates": self.compensates,
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
    ttl_minutes: float | None = None  # from its last update; None: it never expires
    ttl_strategy: str = "delete"  # what its TTL does: delete it, or keep_latest


@dataclass(frozen=True, slots=True)
class ThreadExpiry:
    """A thread's TTL as LangGraph's server shows it (``include=ttl``): what it does, its
    minutes, and when it passes (its last update, or a run's, plus its minutes)."""

    strategy: str
    ttl_minutes: float
    expires_at: dt.datetime


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


@dataclass(frozen=True, slots=True)
class Sealed:
    """One stored ciphertext (``store/secrets_ops.py``): in ``webhooks`` or ``waits``,
    row ``id``; ``field`` is ``secret``, a key of the webhook's ``extra``, or ``answer``."""

    table: str
    id: str
    field: str
    sealed: str
