"""How one run ends, in exactly one way: completed, failed, stopped (cancelled, released
to the queue, or left for the reaper when nothing can be written), parked on its waits,
or, when it owes work at its end, ended after its compensations and rollback.

Kept apart from the execution, which runs the graph and asks here once it knows why it
stopped: every path that writes a run's end is in this module, so each is read beside the
others (an ending decided by one attempt and finished by another goes through
``compensated`` both times).
"""

from __future__ import annotations

import contextlib
import logging
import traceback
from typing import Any

from outlast import faults
from outlast.config import Settings
from outlast.graph.factories import Access
from outlast.graph.registry import GraphRegistry
from outlast.jsonable import to_jsonable
from outlast.runtime.compensation import Compensator, compensated
from outlast.runtime.options import undo_run
from outlast.runtime.outcomes import (
    CANCEL,
    LEASE_LOST,
    SHUTDOWN,
    STORE_FAILED,
    STORE_FAILED_DETAIL,
    SUPERVISOR,
    ExecutionStore,
    Outcome,
    Parked,
    run_config,
)
from outlast.runtime.policy import Action, Complete, Park, RunPolicy
from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease, Run, RunStatus, WaitSpec
from outlast.store.items import for_principal
from outlast.store.transitions import Ask, Facts, compensates, owes, rolls_back
from outlast.vocabulary import EventType

log = logging.getLogger(__name__)


class Endings:
    """The writes that end one claimed run, all under its lease."""

    def __init__(
        self,
        store: ExecutionStore,
        lease: Lease,
        settings: Settings,
        run: Run,
        registry: GraphRegistry,
        policy: RunPolicy,
    ) -> None:
        self.store = store
        self.lease = lease
        self.settings = settings
        self.run = run
        self.registry = registry
        self.policy = policy

    async def act(self, action: Action, values: Any) -> Outcome:
        """Do what the policy decided; ``values`` is the run's best result."""
        if isinstance(action, Complete):
            return await self.completed(values, partial=action.partial)
        if isinstance(action, Park):
            return await self.park(Parked([action.spec]))
        await self.store.release(self.lease, action.reason)
        return Outcome(None, action.detail)

    async def park(self, parked: Parked) -> Outcome:
        # The next attempt's meter starts from the stored usage: what this one metered
        # since its last activity write must be kept, or the budget forgets it.
        await self.policy.record()
        status = await self.store.park(
            self.lease, parked.specs, self.settings.signal_lookback, parked.events
        )
        return Outcome(status, f"{len(parked.specs)} wait(s)")

    async def completed(self, values: Any, partial: dict[str, Any] | None = None) -> Outcome:
        result = to_jsonable(values)
        faults.fault_point(faults.BEFORE_FINISH)
        if partial is not None and isinstance(result, dict):
            result["partial"] = True  # the contract: `result.partial` when closed early
        data: dict[str, Any] = {"status": RunStatus.COMPLETED, "result": result}
        if partial is not None:
            data["partial"] = True
            data["closed_by"] = partial
        await self.store.finish(
            self.lease,
            RunStatus.COMPLETED,
            EventDraft(EventType.RUN_COMPLETED, data),
            result=result,
        )
        return Outcome(RunStatus.COMPLETED)

    async def failed(self, exc: BaseException, sink: EventSink) -> Outcome:
        error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)[-8:]),
        }
        log.warning("run %s failed: %s: %s", self.run.id, type(exc).__name__, exc)
        await self.policy.record()  # the snapshot shows what the failed run consumed
        if await self.owes():
            return await self.compensated(sink, {"status": RunStatus.FAILED, "error": error})
        await self.store.finish(
            self.lease,
            RunStatus.FAILED,
            EventDraft(
                EventType.RUN_FAILED,
                {"status": RunStatus.FAILED, "error": {k: error[k] for k in ("type", "message")}},
            ),
            error=error,
        )
        return Outcome(RunStatus.FAILED, str(exc))

    async def stopped(self, reason: str | None, sink: EventSink, graph: Any) -> Outcome:
        if reason == LEASE_LOST:
            return Outcome(None, "lease lost")
        if reason == STORE_FAILED:
            # Nothing can be written now: the worker gives the run back once the store
            # answers (runtime/giveback.py); it resumes from its last checkpoint.
            return Outcome(None, STORE_FAILED_DETAIL)
        if reason == SUPERVISOR and self.policy.stopped is not None:
            # the node in flight was cancelled on the supervisor's verdict
            state = await graph.aget_state(run_config(self.run))
            action = await self.policy.after_supervisor_stop(state.values)
            return await self.act(action, state.values)
        await self.policy.record()  # as at a park: the next attempt meters on from it
        if reason == CANCEL:
            current = await self.store.get_run(self.run.id)
            # what the cancel asked (the LangGraph face's `interrupt` strategy keeps the
            # state, effects and all)
            ask = Ask.of(current.error if current else None)
            why = ask.reason
            if await self.owes(ask):
                return await self.compensated(sink, ask.ending())
            await self.store.finish(
                self.lease,
                RunStatus.CANCELLED,
                EventDraft(EventType.RUN_CANCELLED, {"status": RunStatus.CANCELLED, "reason": why}),
                error={"type": "cancelled", "reason": why},
            )
            return Outcome(RunStatus.CANCELLED, why)
        await self.store.release(self.lease, reason or SHUTDOWN)
        return Outcome(None, "released")

    async def owes(self, ask: Ask | None = None) -> bool:
        """Whether the run has work to do before it may end as ``ask`` says (by default,
        as it failed): the store's definition, the one the reaper and a release use."""
        effects = await self.store.list_effects(self.run.id)
        return owes(Facts.of(self.run, effects), ask or Ask())

    async def compensated(self, sink: EventSink, ending: dict[str, Any]) -> Outcome:
        """Record how the run ends, undo its effects, put its thread back if a rollback
        was asked, end it so (or park it on a compensation that needs a person)."""
        ending = await self.store.set_ending(self.lease, ending)
        # a compensation defined beside a graph loaded by path is importable once the
        # graph's module is (the servers load every graph at start; this is for the rest)
        with contextlib.suppress(Exception):
            self.registry.load(self.run.graph)
        if compensates(ending):
            done = await Compensator(
                self.store,
                self.lease,
                sink,
                attempts=self.settings.compensation_attempts,
                backoff=self.settings.compensation_backoff,
                timeout=self.settings.compensation_timeout,
            ).run()
            if isinstance(done, WaitSpec):
                return await self.park(Parked([done]))
        else:  # a person gave the rest up: what was undone before that
            done = compensated(await self.store.list_effects(self.run.id))
        if rolls_back(ending):
            # through the run's own checkpointer: fenced by its lease on Postgres
            saver = self.store.checkpointer(self.lease)
            run = self.run
            items = for_principal(self.store.items, run.principal, shared=self.registry.app_auth)
            use = Access("threads.update", saver, items, run_config(run), run.principal)
            async with self.registry.open(run.graph, use) as graph:
                await undo_run(graph, saver, run.thread_id, run.id)
        status = RunStatus(ending["status"])
        error = {**(ending.get("error") or {}), "compensated": done}
        await sink.flush()
        faults.fault_point(faults.BEFORE_FINISH)
        if status == RunStatus.CANCELLED:
            data = {"status": status, "reason": error.get("reason"), "compensated": done}
            kind = EventType.RUN_CANCELLED
        else:
            public = {k: error[k] for k in ("type", "message") if k in error}
            data = {"status": status, "error": {**public, "compensated": done}}
            kind = EventType.RUN_FAILED
        await self.store.finish(self.lease, status, EventDraft(kind, data), error=error)
        return Outcome(status, f"{len(done)} compensation(s)")
