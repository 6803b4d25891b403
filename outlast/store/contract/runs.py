"""Runs and their leases: acceptance, reads of the run rows, and the worker's side of a
run's life (claim, renew, finish, release, reap) with the cancel that may interrupt it.
What the backends do their own way (claim, finish, one statement on Postgres and a
``BEGIN IMMEDIATE`` block on SQLite) is in ``postgres.py`` / ``sqlite.py``; the reads are
written once in ``store/run_ops.py``, the cold-path transitions in ``transition_ops.py``."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Protocol

from outlast.store.hub import Notifying
from outlast.store.records import EventDraft, HeldRun, Lease, ListCursor, NewRun, Reaped, Run
from outlast.vocabulary import RunStatus


class RunStore(Notifying, Protocol):
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
        principal: str | None = "",
    ) -> list[Run]:
        """The principal's runs, newest first; ``before`` is the keyset cursor of the last
        row of the previous page (a keyset, so a page does not shift as runs arrive)."""

    @abc.abstractmethod
    async def get_run_by_key(self, principal: str, key: str) -> Run | None:
        """The run accepted with this idempotency key, if any."""

    @abc.abstractmethod
    async def count_active(self, principal: str) -> int:
        """Runs of ``principal`` that hold or wait for a worker (queued, running,
        cancelling): what the in-flight limit counts. Waiting runs hold nothing."""

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
        ``cancelling`` status tells the worker to stop. A worker names the runs it
        holds: those it executes, and those it is giving back after their store failed
        under them (runtime/giveback.py); a run it let go of must expire and be reaped,
        not be kept alive by a worker that no longer has it. No event, no notification:
        a renewal is not a transition."""

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
    async def reap(
        self,
        limit: int = 100,
        grace: float = 0.0,
        *,
        holder: str | None = None,
        held: Sequence[str] = (),
        durability: str = "sync",
    ) -> list[Reaped]:
        """Up to ``limit`` runs whose worker lease expired (on database time), none
        within ``grace`` seconds of a database server's start (a lease that ran out
        while the server was down had nobody able to renew it), and none that the
        reaping worker ``holder`` holds and executes (``held``: it is late, not lost),
        each in its own new epoch so the lost worker is fenced: a takeover.

        An attempt that saved a step since its claim (a root graph's ``node.updated``
        after its ``run.started``, not a recovered one; under a ``durability``, the
        run's or else the one given, other than ``exit``) is given back (``attempts``
        - 1) and the run is ``queued`` again (``run.requeued``, ``takeover``
        ``lease_expired_with_progress``, ``counted`` false). One that saved none counts:
        ``queued`` again (``lease_expired_without_progress``, ``counted`` true), or
        ``failed`` on the last of ``max_attempts`` (``run.failed`` with ``error``; the
        run's error ``worker_lost``, its reason a poison pill). ``cancelled`` if it was
        cancelling (``run.cancelled``). Payload ``status``, ``reason``, ``attempts``
        (spent, after this takeover), ``takeover``, ``counted``. A run that owes work at
        its end (compensations, a rollback) goes back to a worker whatever its attempts,
        its ending recorded (``run.requeued``, ``queued`` or ``cancelling`` with no
        worker). Notifies EVENTS, QUEUE, STATUS for each (``store/transitions.py:reap``)."""
