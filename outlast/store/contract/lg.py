"""The LangGraph face's records: its threads and its runs, each LangGraph run a stretch of
one outlast run (written once for both backends in ``store/lgthreads.py``)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Protocol

from outlast.store.hub import Notifying
from outlast.store.options import TTLStrategy
from outlast.store.records import LgRun, NewRun, Run, Thread, ThreadExpiry


class LangGraphStore(Notifying, Protocol):
    # -- threads -------------------------------------------------------------------------

    @abc.abstractmethod
    async def lg_create_thread(
        self,
        thread_id: str,
        principal: str,
        metadata: dict[str, Any],
        ttl_minutes: float | None = None,
        ttl_strategy: TTLStrategy = "delete",
    ) -> tuple[Thread, bool]:
        """``(thread, True)``, or the existing thread and ``False`` (whoever owns it: the
        API checks the owner). A new thread's TTL is ``ttl_minutes`` with
        ``ttl_strategy``, else the deployment's default and strategy
        (``options.thread_ttl``); an existing one's is unchanged. No event, no
        notification."""

    @abc.abstractmethod
    async def lg_set_thread_ttl(
        self, thread_id: str, ttl_minutes: float | None, strategy: TTLStrategy = "delete"
    ) -> Thread | None:
        """The thread's own TTL (None: it never expires) and strategy, counted from now;
        None if unknown."""

    @abc.abstractmethod
    async def lg_thread_expiry(self, thread_id: str) -> ThreadExpiry | None:
        """The thread's TTL and when it passes (from its last update, or a run's); None
        if it has none (or is unknown)."""

    @abc.abstractmethod
    async def lg_expire_threads(self, *, force: bool = False) -> list[str] | None:
        """Delete the threads past their TTL (nothing updated on them, the thread or a
        run of it, for their ``ttl_minutes``) with their runs and logs, unless a run of
        theirs is active (queued, running, cancelling, waiting): returns their ids (the
        caller deletes their checkpoints). A ``keep_latest`` thread past its TTL is kept
        instead, its checkpoints pruned to the latest of each namespace (here, not by
        the caller), once per update. None when the sweep is not due: it runs once per
        ``checkpointer.ttl.sweep_interval_minutes`` across every process (``force``:
        now, whatever the lease)."""

    @abc.abstractmethod
    async def lg_prune_threads(self, thread_ids: Sequence[str], strategy: TTLStrategy) -> list[str]:
        """Now, what a TTL's ``strategy`` does to each of ``thread_ids`` (``delete``: the
        thread, its runs, logs and checkpoints; ``keep_latest``: its latest checkpoints
        only): returns those that existed. ``ThreadBusy``, and nothing pruned, if one has
        a run active. Unknown ids are skipped; the caller checks whose they are."""

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

    # -- LangGraph runs ------------------------------------------------------------------

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
        self,
        run_id: str,
        answers: dict[str, Any],
        lg: LgRun,
        resume_with: dict[str, Any] | None = None,
    ) -> tuple[LgRun, bool]:
        """Answer the waits ``answers`` (wait id → value) of a waiting run, as
        ``answer`` with ``how="resume"``, and open the LangGraph run that continues its
        log after the current last seq, in one transaction: every answer lands or none
        (WaitNotOpen when one was answered already: two concurrent resumes give one
        resume and one refusal). ``resume_with`` (LangGraph's ``update`` and ``goto``)
        is kept in the same transaction in the run's options as ``resume_with``, with
        the ids of the waits it goes with (``waits``): the attempt that consumes those
        answers applies it with them, in one step. ``lg``'s idempotency key seen again
        with the same kwargs returns that LangGraph run and ``False``."""

    @abc.abstractmethod
    async def lg_get_run(self, lg_id: str) -> LgRun | None:
        """The LangGraph run (deleted ones included: the caller hides them), or None."""

    @abc.abstractmethod
    async def lg_run_by_key(self, principal: str, key: str) -> LgRun | None:
        """The LangGraph run ``principal`` made under idempotency key ``key`` (a new run's
        or a resume's), or None."""

    @abc.abstractmethod
    async def lg_runs_of_thread(self, thread_id: str) -> list[LgRun]:
        """Newest first; runs made through ``/v1`` appear as their own LangGraph run."""

    @abc.abstractmethod
    async def lg_runs_of_run(self, run_id: str) -> list[LgRun]:
        """The LangGraph runs that are stretches of one outlast run, oldest first."""

    @abc.abstractmethod
    async def lg_delete_runs_of(self, run_id: str) -> None:
        """Hide every LangGraph run of an outlast run (cancelled with ``rollback``)."""
