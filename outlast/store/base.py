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
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from outlast.store.hub import Hub


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})
TERMINAL_EVENTS = frozenset({"run.completed", "run.failed", "run.cancelled"})


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

    @abc.abstractmethod
    def checkpointer(self, lease: Lease | None = None) -> BaseCheckpointSaver[Any]:
        """A LangGraph saver for one run over the shared connections; with a lease, its
        writes are fenced like every other worker write (where the backend can)."""

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
    ) -> list[Run]:
        """Newest first; ``before`` is the keyset cursor of the last row of the previous page."""

    @abc.abstractmethod
    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]: ...

    @abc.abstractmethod
    async def first_retained_seq(self, run_id: str) -> int | None:
        """Lowest seq still stored for the run; None when nothing is retained."""

    @abc.abstractmethod
    async def prune_events(self, run_id: str, upto_seq: int) -> int:
        """Delete events with ``seq <= upto_seq`` (retention); returns how many."""

    # -- the worker side -----------------------------------------------------------------

    @abc.abstractmethod
    async def claim(self, worker_id: str, ttl: float, limit: int) -> list[Run]:
        """Take up to ``limit`` queued runs, oldest first, in one statement.

        Each claimed run gets status ``running``, a new lease epoch, ``attempts + 1``, a
        lease that expires ``ttl`` seconds from now on database time, and a ``run.started``
        event.
        """

    @abc.abstractmethod
    async def renew(self, worker_id: str, ttl: float) -> list[HeldRun]:
        """Extend every lease this worker holds; the runs not returned are no longer ours."""

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
