"""The worker: claims queued runs and executes them, keeps its lease, reaps the dead.

One claim statement (``FOR UPDATE SKIP LOCKED`` on Postgres) takes up to the free
capacity at once. A worker sleeps on the hub between claims and is woken by ``NOTIFY``
(or, on SQLite, by the in-process publish) when a run becomes claimable; ``queue_poll``
is only the safety net for a notification lost while the listener reconnected.

Its lease is one statement for all its runs every ``worker_heartbeat`` seconds; a run
missing from the answer was taken over, and its execution stops without writing. The
reaper, which any worker runs, requeues runs whose worker stopped renewing.

A run accepted by this process can skip the queue (eager start, ``runtime/eager.py``):
when the claim loop found nothing more to take and has not been woken since, and a slot
is free, ``reserve`` holds the slot and the acceptance claims the run in its own
transaction; ``adopt`` then starts it here, with no ``NOTIFY`` and no claim statement.

Shutdown drains: each run stops at its next step boundary (``RunControl.request_drain``)
and goes back to the queue; after ``shutdown_grace`` the node in flight is cancelled and
the run goes back from its last checkpoint.

The worker supervises its own loops (``runtime/loops.py``): one that raises is restarted
after a backoff; one that keeps failing stops the worker, and ``run()`` raises
``LoopFailed`` once the runs have drained, so that the process exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Protocol

from outlast import faults, logs
from outlast.config import Settings
from outlast.graph.registry import GraphRegistry
from outlast.runtime import metrics
from outlast.runtime.claim_latency import observe_claim
from outlast.runtime.deliverer import Deliverer, DelivererStore
from outlast.runtime.execution import Execution
from outlast.runtime.giveback import give_back
from outlast.runtime.loops import LoopFailed, supervised
from outlast.runtime.outcomes import (
    CANCEL,
    LEASE_LOST,
    SHUTDOWN,
    STORE_FAILED_DETAIL,
    ExecutionStore,
    Outcome,
    store_failure,
)
from outlast.runtime.retention import retain
from outlast.runtime.scheduler import CronScheduler, FireCron
from outlast.runtime.waker import Waker
from outlast.store import TERMINAL, Claimant, CronStore, LangGraphStore, Run, RunStatus
from outlast.store.hub import ANY, CONTROL, QUEUE, wait_for
from outlast.webhooks.bodies import BodyMaker

log = logging.getLogger(__name__)


def _noop() -> None:
    return None


def _outcome_label(outcome: Outcome) -> str:
    if outcome.status is not None:
        return outcome.status.value
    return {"lease lost": "lease_lost", STORE_FAILED_DETAIL: "store_failed"}.get(
        outcome.detail, "released"
    )


def default_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class WorkerStore(ExecutionStore, DelivererStore, LangGraphStore, CronStore, Protocol):
    """What a worker uses: its executions', its deliverer's and its waker's parts,
    LangGraph's records (temporary threads expire) and the crons its scheduler fires;
    never threads, secrets, assistants."""


class Worker:
    def __init__(
        self,
        store: WorkerStore,
        registry: GraphRegistry,
        settings: Settings,
        *,
        worker_id: str | None = None,
        bodies: Mapping[str, BodyMaker] | None = None,
        fire_cron: FireCron | None = None,
    ) -> None:
        self.store = store
        self.bodies = dict(bodies or {})  # webhook bodies of the faces (webhooks/bodies.py)
        # how a cron tick's run is made (a face's acceptance: runtime/scheduler.py); a
        # worker without it runs no cron scheduler
        self.fire_cron = fire_cron
        self.registry = registry
        self.settings = settings
        self.id = worker_id or default_worker_id()
        self.held: dict[str, Execution] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []
        self._unsubscribe: Callable[[], None] = _noop
        self._control_checks: set[asyncio.Task[None]] = set()
        # executions stopping after this worker claimed their run again (``_start``)
        self._stale: set[asyncio.Task[None]] = set()
        self.completed = 0
        self._reserved = 0  # slots held for runs being accepted eagerly (reserve/adopt)
        self._drained = False  # the last claim took all there was, and no NOTIFY since
        self._queue_wake: asyncio.Event | None = None
        # Runs start in the worker's context, not in that of the request that adopted one.
        self._context = contextvars.copy_context()
        self.failure: LoopFailed | None = None  # the loop that stopped this worker
        self.stopped = False  # run() has returned or raised
        self._renewed = time.monotonic()  # the last renewal the store took

    # -- lifecycle ---------------------------------------------------------------------

    async def run(self) -> None:
        """Claim and execute until ``stop()``; returns once every run is drained."""
        self._context = contextvars.copy_context()
        self._unsubscribe = self.store.hub.subscribe(CONTROL, self._on_control)
        loops = {
            "heartbeat": self._heartbeat_loop,
            "reaper": self._reaper_loop,
            "waker": Waker(self.store, self.settings).run,
            "retention": self._retention_loop,
            "deliverer": Deliverer(self.store, self.settings, self.id, self.bodies).run,
        }
        if self.fire_cron is not None:
            loops["crons"] = CronScheduler(self.store, self.settings, self.fire_cron).run
        for name, loop in loops.items():
            task = asyncio.create_task(
                supervised(name, loop, self._stopping), name=f"outlast-{name}"
            )
            task.add_done_callback(self._loop_ended)
            self._background.append(task)
        try:
            try:
                await supervised("claim", self._claim_loop, self._stopping)
            except LoopFailed as exc:
                self.failure = self.failure or exc
        finally:
            self._unsubscribe()
            log.info("worker %s stopping: draining %d run(s)", self.id, len(self._tasks))
            await self._drain()
            for task in self._background:
                task.cancel()
            _, stuck = await asyncio.wait(self._background, timeout=5.0)
            for task in stuck:  # never hang the shutdown on a background loop
                log.warning("background task %s did not stop", task.get_name())
            log.info("worker %s stopped", self.id)
            self.stopped = True
        if self.failure is not None:
            raise self.failure

    def _loop_ended(self, task: asyncio.Task[None]) -> None:
        """A background loop gave up: the worker cannot keep its promises; stop it."""
        if task.cancelled() or not isinstance(task.exception(), LoopFailed):
            return
        self.failure = self.failure or task.exception()  # type: ignore[assignment]
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        self._slot_freed.set()

    async def _claim_loop(self) -> None:
        settings = self.settings
        with self.store.hub.watch(QUEUE) as wake:
            self._queue_wake = wake
            while not self._stopping.is_set():
                faults.fault_point(faults.CLAIM_LOOP)
                self._drained = False
                free = self._free()
                if free <= 0:
                    self._slot_freed.clear()
                    await self._slot_freed.wait()
                    continue
                wake.clear()
                if self.held:
                    # The busier this worker, the longer it lets others claim first, also
                    # when a NOTIFY wakes them all: new runs go to the least loaded worker
                    # instead of to whichever process wakes first (which, once it is the
                    # faster one, would take every run that arrives one by one).
                    await asyncio.sleep(0.05 * len(self.held) / settings.worker_concurrency)
                # A small batch, then claim again: every worker woken by the same burst
                # gets its share instead of the fastest taking all of it.
                batch = min(free, settings.claim_batch)
                try:
                    runs = await self.store.claim(self.id, settings.worker_lease_ttl, batch)
                except Exception as exc:  # database down: keep the worker alive
                    log.warning("claim failed: %s", exc)
                    await wait_for(self._stopping, min(settings.queue_poll, 1.0))
                    continue
                for run in runs:
                    faults.fault_point(faults.AFTER_CLAIM)
                    self._start(Execution(self.store, self.registry, settings, run, self.id))
                if len(runs) < batch:
                    # Nothing more to take: sleep until a NOTIFY, a stop, or the safety net.
                    self._drained = True
                    waiter = asyncio.ensure_future(wake.wait())
                    stopper = asyncio.ensure_future(self._stopping.wait())
                    await asyncio.wait(
                        {waiter, stopper},
                        timeout=settings.queue_poll,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    waiter.cancel()
                    stopper.cancel()

    def _free(self) -> int:
        return self.settings.worker_concurrency - len(self.held) - self._reserved

    # -- eager start -------------------------------------------------------------------

    def reserve(self) -> Claimant | None:
        """A free slot held for a run being accepted in this process, as the claimant the
        store claims it for; None when the run should queue instead: the worker is
        stopping or full, or runs are queued that it has not taken yet (they go first).
        Every reservation must be settled with ``adopt``."""
        if not self.takes_runs_now:
            return None
        self._reserved += 1
        return Claimant(self.id, self.settings.worker_lease_ttl)

    @property
    def takes_runs_now(self) -> bool:
        """Whether ``reserve`` would hold a slot now."""
        wake = self._queue_wake
        return (
            self.settings.eager_start
            and not self._stopping.is_set()
            and self._drained
            and wake is not None
            and not wake.is_set()
            and self._free() > 0
        )

    def adopt(self, run: Run | None) -> bool:
        """Settle a reservation: start ``run`` here if the store claimed it for this
        worker; otherwise free the slot. A claimed run that is never started (the
        process died or the request was cancelled in between, or the worker began to
        stop) holds a lease nobody renews, and the reaper requeues it like the run of a
        dead worker."""
        self._reserved -= 1
        claimed = (
            run is not None
            and run.status == RunStatus.RUNNING
            and run.worker_id == self.id
            and run.id not in self.held
        )
        if not claimed or self._stopping.is_set():
            self._slot_freed.set()
            return False
        assert run is not None
        faults.fault_point(faults.EAGER_START)
        metrics.EAGER_STARTS.inc()
        self._start(Execution(self.store, self.registry, self.settings, run, self.id))
        return True

    def _start(self, execution: Execution) -> None:
        run_id = execution.run.id
        stale = self.held.get(run_id)
        if stale is not None:
            # This worker lost the run (starved past its lease, another worker took it
            # over) and claimed it again before its old execution noticed: the old one
            # stops now, without writing, and must not outlive the new one in ``held``.
            log.warning("run %s: claimed again; its earlier execution here stops", run_id)
            stale.request_stop(LEASE_LOST)
            stopping = self._tasks.get(run_id)
            if stopping is not None:  # kept referenced (and drained) until it is done
                self._stale.add(stopping)
                stopping.add_done_callback(self._stale.discard)
        self.held[run_id] = execution
        self._tasks[run_id] = asyncio.create_task(
            self._execute(execution), name=f"run-{run_id}", context=self._context.copy()
        )

    async def _execute(self, execution: Execution) -> None:
        run_id = execution.run.id
        # This task's own context (a copy): its records, the outcome line included, name
        # the run; nothing to reset, the context ends with the task.
        logs.RUN_ID.set(run_id)
        logs.THREAD_ID.set(execution.run.thread_id)
        metrics.WORKER_IN_FLIGHT.inc()
        try:
            await observe_claim(self.store, execution.run)
            outcome = await execution.execute()
            log.info("run %s: %s %s", run_id, outcome.status or "stopped", outcome.detail)
            metrics.WORKER_FINISHED.labels(outcome=_outcome_label(outcome)).inc()
            if outcome.status in TERMINAL:
                self.completed += 1
            elif outcome.detail == STORE_FAILED_DETAIL and await give_back(
                self.store, execution.lease, self._stopping
            ):  # held meanwhile: the heartbeat renews its lease
                log.info("run %s: given back to the queue after its store failed", run_id)
        except Exception:
            metrics.WORKER_FINISHED.labels(outcome="crashed").inc()
            log.exception("run %s: execution crashed", run_id)
        finally:
            metrics.WORKER_IN_FLIGHT.dec()
            if self.held.get(run_id) is execution:  # not a later execution of the run
                self.held.pop(run_id, None)
                self._tasks.pop(run_id, None)
            self._slot_freed.set()

    async def _drain(self) -> None:
        if not self._tasks and not self._stale:
            return
        for execution in list(self.held.values()):
            execution.request_stop(SHUTDOWN)
        tasks = [*self._tasks.values(), *self._stale]
        _, pending = await asyncio.wait(tasks, timeout=self.settings.shutdown_grace)
        if pending:
            log.warning(
                "%d run(s) did not reach a step boundary; cancelling their nodes", len(pending)
            )
            for execution in list(self.held.values()):
                execution.interrupt_node()
            await asyncio.wait(pending, timeout=max(self.settings.shutdown_grace, 5.0))

    # -- leases and control ------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.worker_heartbeat)
            if self.held:
                faults.fault_point(faults.HEARTBEAT_LOOP)
                await self._renew_held()

    async def _renew_held(self) -> bool:
        """Renew this worker's leases; False when the store did not take it. Tried twice:
        after a database restart the pool may hand out a connection that died with the
        server, whose failure discards it, and the next try gets a fresh one."""
        before = set(self.held)
        for tries_left in (1, 0):
            try:
                held = await self.store.renew(self.id, self.settings.worker_lease_ttl, list(before))
                break
            except Exception as exc:
                if not tries_left or not store_failure(exc):
                    log.warning("lease renewal failed: %s", exc)
                    return False
        self._renewed = time.monotonic()
        rows = {h.run_id: h for h in held}
        for run_id in before:
            execution = self.held.get(run_id)
            if execution is None or not execution.busy:
                continue
            row = rows.get(run_id)
            if row is None or row.epoch != execution.lease.epoch:
                log.warning("run %s: lease lost; stopping without further writes", run_id)
                execution.request_stop(LEASE_LOST)
            elif row.status == RunStatus.CANCELLING:
                execution.request_stop(CANCEL)
        return True

    async def _reaper_loop(self) -> None:
        while True:
            faults.fault_point(faults.REAPER_LOOP)
            try:
                await self.reap_once()
            except Exception as exc:
                log.warning("reaper failed: %s", exc)
            await asyncio.sleep(self.settings.reaper_interval)

    async def reap_once(self) -> None:
        """One round of the reaper. It never takes a run this worker executes, whatever
        its lease says (``held``: a worker whose own heartbeat was late, its loop
        starved, is alive, and renews at its next beat); a run this worker holds in the
        store without executing it (an eager claim it never started, an execution that
        crashed) is reaped as any other. After an outage this worker's own leases may
        have lapsed while nothing could be written: renewed first, so that other
        workers do not reap them as a dead worker's when the store comes back before
        its next heartbeat. If that renewal fails, this round reaps nothing: the store
        answered the reap and not the renewal (a connection that died with a restarting
        server), and the other workers' renewals may be failing for the same outage.

        Whether a reaped run's attempt counts is the store's decision (a run that saved
        a step since its claim gets it back, ``store/transitions.py:reap``); the
        deployment's durability tells it whether steps are saved as they finish."""
        late = time.monotonic() - self._renewed > self.settings.worker_heartbeat * 1.5
        if self.held and late and not await self._renew_held():
            return
        reaped_runs = await self.store.reap(
            grace=self.settings.worker_lease_ttl,
            holder=self.id,
            held=list(self.held),
            durability=self.settings.durability,
        )
        for reaped in reaped_runs:
            log.warning("run %s: worker lease expired → %s", reaped.run_id, reaped.status)

    async def _retention_loop(self) -> None:
        settings = self.settings
        while True:
            faults.fault_point(faults.RETENTION_LOOP)
            try:
                await retain(self.store, settings)
            except Exception as exc:
                log.warning("retention failed: %s", exc)
            await asyncio.sleep(settings.retention_interval)

    def _on_control(self, run_id: str) -> None:
        targets = list(self.held) if run_id == ANY else [run_id]
        for target in targets:
            if target in self.held:
                task = asyncio.create_task(self._check_control(target))
                self._control_checks.add(task)
                task.add_done_callback(self._control_checks.discard)

    async def _check_control(self, run_id: str) -> None:
        execution = self.held.get(run_id)
        if execution is None:
            return
        run = await self.store.get_run(run_id)
        if run is not None and run.status == RunStatus.CANCELLING:
            execution.request_stop(CANCEL)
