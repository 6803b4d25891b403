"""One claimed run inside a worker: resume or start the graph, stream it into events,
and end the run in exactly one way.

How a run ends, and who decides:

- the graph returns → ``completed`` with the final state as result;
- the graph raises → ``failed`` with the error (type, message);
- a cancel request → the node in flight is cancelled (``RunControl.request_drain`` plus
  task cancellation) → ``cancelled``;
- worker shutdown → drain at the next step boundary (``GraphDrained``), or after the grace
  period cancel the node in flight → the run is released to the queue, its checkpoints
  intact, and another worker (or this one, restarted) continues it;
- lease lost (another worker took it over) → stop at once and write nothing more.

Recovery: the run's id is put in the checkpoint metadata (``run_id``). If the thread's
latest checkpoint carries this run's id, an earlier attempt got that far: the graph
resumes from it (input ``None``) and finished nodes do not run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import logging
import traceback
import uuid
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.errors import GraphDrained
from langgraph.runtime import RunControl, Runtime
from langgraph.types import Command, StateSnapshot

from outlast import logs, tracing
from outlast.config import Settings
from outlast.errors import LeaseLost
from outlast.graph.registry import GraphRegistry
from outlast.jsonable import to_jsonable
from outlast.nodes.effects import LEDGER_KEY
from outlast.runtime import faults, metrics
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.budget import Breach, BudgetMeter, tranche_schema
from outlast.runtime.effects import RunLedger
from outlast.runtime.events_mode import EventsTap
from outlast.runtime.keeper import Keeper
from outlast.runtime.options import (
    AFTER,
    NO_CHECKPOINT,
    RunOptions,
    before_run,
    restore_as_head,
)
from outlast.runtime.outcomes import (
    _PRIORITY,
    CANCEL,
    LEASE_LOST,
    SHUTDOWN,
    STORE_FAILED,
    SUPERVISOR,
    BudgetStop,
    CloseWithBest,
    Outcome,
    Parked,
    run_config,
    store_failure,
)
from outlast.runtime.recovery import logged_tasks, missing_updates
from outlast.runtime.sink import EventSink, SinkClosed
from outlast.runtime.translate import Translator
from outlast.runtime.waits import spec_from_interrupt
from outlast.store import EventDraft, Lease, Run, RunStatus, Store, WaitSpec
from outlast.store.items import for_principal
from outlast.supervisor.ladder import SupervisorState, supervisor

log = logging.getLogger(__name__)

# The config key under which LangGraph looks for a parent Runtime (see `_stream`).
CONFIG_KEY_RUNTIME = "__pregel_runtime"


class Execution:
    def __init__(
        self, store: Store, registry: GraphRegistry, settings: Settings, run: Run, worker_id: str
    ) -> None:
        self.store = store
        self.registry = registry
        self.settings = settings
        self.run = run
        self.lease = Lease(run.id, worker_id, run.lease_epoch)
        self.control = RunControl()
        self.stop_reason: str | None = None
        self.meter = BudgetMeter(run.budget, run.usage, settings.model_prices)
        self.breach: Breach | None = None
        self.supervisor_decision: dict[str, Any] | None = None
        self._activity: ActivityTracker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._graph: Any = None
        self._sink: EventSink | None = None
        self._graph_task: asyncio.Task[Any] | None = None
        self._finished = False

    # -- requests from the worker ------------------------------------------------------

    def request_stop(self, reason: str) -> None:
        """Cancel and lease loss stop the node in flight now; shutdown drains first."""
        if self._finished:
            return
        if self.stop_reason is None or _PRIORITY[reason] > _PRIORITY[self.stop_reason]:
            self.stop_reason = reason
        self.control.request_drain(reason)
        if reason != SHUTDOWN:
            self.interrupt_node()

    def interrupt_node(self) -> None:
        if self._graph_task is not None and not self._graph_task.done():
            self._graph_task.cancel()

    @property
    def busy(self) -> bool:
        return not self._finished

    # -- the run -----------------------------------------------------------------------

    async def execute(self) -> Outcome:
        # Bound first, so the sink's and the activity tracker's tasks inherit them too.
        run = self.run
        with (
            logs.bind_run(run.id, run.thread_id),
            tracing.run_span(run.id, run.thread_id, run.graph, run.attempts),
        ):
            return await self._execute()

    async def _execute(self) -> Outcome:
        sink = EventSink(
            self.store,
            self.lease,
            lambda exc: self.request_stop(
                LEASE_LOST if isinstance(exc, LeaseLost) else STORE_FAILED
            ),
            max_bytes=self.settings.max_event_bytes,
            carry_window=self.settings.event_carry_window if self.store.carries_events else 0,
        )
        self._sink = sink
        activity = ActivityTracker(
            self.store,
            self.lease,
            sink,
            ttl=self.settings.activity_lease_ttl,
            flush_interval=self.settings.activity_flush_interval,
            usage=self.meter.usage if self.meter.limits else None,
            on_expired=self._supervise if self.settings.supervisor else None,
        )
        self._activity = activity
        self._loop = asyncio.get_running_loop()
        translator = Translator(sink, self.settings.message_flush_interval, activity)
        try:
            self._graph_task = asyncio.create_task(self._stream(sink, translator))
            try:
                result = await self._graph_task
                translator.flush_messages()
                await sink.flush()
                if isinstance(result, Parked):
                    return await self._park(result)
                if isinstance(result, BudgetStop):
                    return await self._budget_stop(result)
                await self._record_usage()
                return await self._end_completed(result)
            except asyncio.CancelledError:
                if not (self._graph_task.cancelled() and self.stop_reason):
                    raise
                return await self._end_stopped(sink, translator)
            except GraphDrained:
                return await self._end_stopped(sink, translator)
            except LeaseLost:  # a fenced checkpoint write
                self.request_stop(LEASE_LOST)
                return await self._end_stopped(sink, translator)
            except SinkClosed:
                return await self._end_stopped(sink, translator)
            except Exception as exc:
                if store_failure(exc):
                    # The database failed under the graph (a checkpoint write, a ledger
                    # write): not the run's fault. Whatever was committed stays; the run
                    # is requeued from its last checkpoint once its lease runs out.
                    self.request_stop(STORE_FAILED)
                if self.stop_reason in (LEASE_LOST, STORE_FAILED):
                    return await self._end_stopped(sink, translator)
                with contextlib.suppress(Exception):
                    translator.flush_messages()
                    await sink.flush()
                return await self._end_failed(exc)
        except LeaseLost:
            return Outcome(None, "lease lost")
        finally:
            self._finished = True
            translator.close()
            await activity.close()
            await sink.close()

    async def _stream(self, sink: EventSink, translator: Translator) -> Any:
        run = self.run
        items = for_principal(self.store.items, run.principal)  # a node's `store`
        graph = self.registry.for_run(run.graph, self.store.checkpointer(self.lease, sink), items)
        config = run_config(run)
        # LangGraph's `runtime.heartbeat()` inside nodes renews the activity lease: the run's
        # Runtime inherits the heartbeat of the parent runtime seeded here (the seam
        # LangGraph keeps for servers). Under a node idle-timeout policy LangGraph's own
        # heartbeat takes over, as it should.
        # (LangGraph takes the store from that parent runtime, so it goes there too.)
        config["configurable"][CONFIG_KEY_RUNTIME] = Runtime(heartbeat=self._heartbeat, store=items)
        # Effects declared with @effect find the run's ledger here.
        config["configurable"][LEDGER_KEY] = RunLedger(self.store, run.id, sink)
        self._graph = graph
        options = RunOptions.of(run)
        graph_input: Any = options.first_input(run.input)
        if options.not_before is not None and run.last_seq <= 2:
            due = options.not_before - dt.datetime.now(dt.UTC)
            if due.total_seconds() > 0:
                # `after_seconds`: a timer wait, so the run holds no worker meanwhile
                spec = WaitSpec(interrupt_id=AFTER, kind="timer", wake_at=options.not_before)
                return Parked([spec])
        meter = self.meter
        if run.last_seq > 2:
            closed = await self._runtime_answers(meter)
            if closed is not None:
                state = await graph.aget_state(config)
                return BudgetStop(closed, state.values)
        # A first claim has exactly two events (created, started); more means an earlier
        # attempt, a drain or a wait happened, and the thread holds this run's checkpoints.
        resumed = False
        if run.last_seq > 2:
            state = await graph.aget_state(config)
            if state.metadata and state.metadata.get("run_id") == run.id:
                resumed = True
                translator.logged_tasks = await logged_tasks(self.store, run)
                for lost in await missing_updates(graph, state, run.id, translator.logged_tasks):
                    sink.put(lost)
                graph_input = await self._continuation(state, sink)
                if graph_input is _FINISHED:
                    return state.values  # it had finished; only the final write was lost
        if options.rollback_of and not resumed:
            # multitask_strategy=rollback: start from before the run it replaced (which
            # has ended: runs of a thread go one at a time)
            fork = await before_run(graph, config, options.rollback_of)
            if fork is NO_CHECKPOINT:
                await self.store.checkpointer().adelete_thread(run.thread_id)
            elif fork is not None:  # the head again, pending writes and all
                await restore_as_head(self.store.checkpointer(), run.thread_id, fork)
        if options.checkpoint_id and not resumed:  # a fork, until the run has its own
            config["configurable"]["checkpoint_id"] = options.checkpoint_id
        final: Any = None
        keeper = Keeper(options, sink, translator)
        tap = EventsTap(sink) if "events" in options.keep else None
        if tap is not None:
            tap.attach(config)  # type: ignore[arg-type]
        try:
            parts: Any = graph.astream(  # type: ignore[call-overload]
                graph_input,
                config,
                stream_mode=options.stream_modes(),
                subgraphs=True,
                version="v2",
                durability=options.durability or self.settings.durability,
                control=self.control,
                **options.astream_kwargs(),
            )
            if tap is not None:
                parts = tap.wrap(parts)
            async for part in parts:
                keeper.keep(part)
                if part["type"] == "values":
                    if not part["ns"]:
                        final = part["data"]  # the root graph's state after each step
                    continue
                if part["type"] in ("checkpoints", "debug"):
                    continue
                translator.feed(part)
                if meter.limits:
                    meter.on_part(part)
                if meter.limits and self.breach is None:
                    self.breach = meter.breach()
                    if self.breach is not None:
                        # stop at the next step boundary, with a checkpoint there
                        self.control.request_drain("budget")
        except GraphDrained:
            if self.breach is None or self.stop_reason is not None:
                raise
            return BudgetStop(self.breach.describe(), final)
        finally:
            if tap is not None:
                await tap.close()
        if translator.interrupts:
            state = await graph.aget_state(config)
            if state.interrupts:
                specs = [spec_from_interrupt(i) for i in state.interrupts]
                return Parked(specs, tuple(keeper.take_held()))
        keeper.release_held()  # no wait after all: they go out as they are
        return final

    async def _continuation(self, state: StateSnapshot, sink: EventSink) -> Any:
        """What to feed the graph to go on from this run's last checkpoint: the answers
        to its pending interrupts, or ``None`` to resume after a crash or a drain."""
        pending = {i.id for i in state.interrupts}
        answered = await self.store.list_waits(self.run.id, "answered") if pending else []
        resume = {w.interrupt_id: w.answer for w in answered if w.interrupt_id in pending}
        sink.put(
            EventDraft(
                "run.resumed",
                {
                    "checkpoint_id": state.config.get("configurable", {}).get("checkpoint_id"),
                    "next": [t.name for t in state.tasks],
                    "attempt": self.run.attempts,
                    "answers": len(resume),
                },
            )
        )
        # Not `state.next`: it leaves out the tasks whose writes were saved before the
        # crash, and a step whose every task had saved its writes would look finished.
        if not state.tasks:
            return _FINISHED
        note = self.meter.extra.pop("supervisor_note", None)
        if note is not None:
            await self._record_usage()  # consumed: never added twice
            return Command(
                update={"messages": [HumanMessage(content=note, name="supervisor")]},
                resume=resume or None,
            )
        return Command(resume=resume) if resume else None

    def _heartbeat(self) -> None:
        """Called by nodes, possibly from a worker thread (sync nodes)."""
        activity, loop = self._activity, self._loop
        if activity is None or loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            activity.signal(None, "heartbeat")
        else:
            loop.call_soon_threadsafe(activity.signal, None, "heartbeat")

    async def _supervise(self, look: dict[str, Any]) -> str:
        """An activity lease expired: ask the supervisor ladder, record its verdict, act."""
        question: SupervisorState = {
            "trigger": "activity_expired",
            "renewal_cap": self.settings.supervisor_renewal_cap,
            "can_remind": self._can_remind(),
            "reminders": int(self.meter.extra.get("reminders", 0)),
            **look,  # type: ignore[typeddict-item]
        }
        state = await supervisor.ainvoke(question)
        verdict = str(state.get("verdict", "renew"))
        metrics.SUPERVISOR_VERDICTS.labels(tier=str(state.get("tier")), verdict=verdict).inc()
        if self._sink is not None:
            with contextlib.suppress(SinkClosed):
                self._sink.put(
                    EventDraft(
                        "supervisor.verdict",
                        {
                            "trigger": "activity_expired",
                            "activity": look["activity"]["name"],
                            "tier": state.get("tier"),
                            "verdict": verdict,
                            "reason": state.get("reason", ""),
                            "cost": state.get("cost") or {"model_calls": 0, "tokens": 0},
                        },
                    )
                )
        if verdict in ("remind", "change_strategy") and not self._can_remind():
            verdict = "escalate"  # nowhere to put a message: a person decides
        if verdict in ("close", "escalate", "remind", "change_strategy"):
            self.supervisor_decision = {
                "verdict": verdict,
                "activity": look["activity"],
                "reason": state.get("reason", ""),
            }
            self.request_stop(SUPERVISOR)
        return verdict

    async def _record_usage(self, partial: dict[str, Any] | None = None) -> None:
        """Usage (when the run has a budget) and, when a budget or the supervisor closed
        the run, why its result is partial."""
        if self.meter.limits or partial is not None or self.meter.extra:
            usage: dict[str, Any] = (
                self.meter.usage() if self.meter.limits else dict(self.meter.extra)
            )
            if partial is not None:
                usage["partial"] = partial
            await self.store.set_activity(self.lease, None, usage)

    async def _runtime_answers(self, meter: BudgetMeter) -> dict[str, Any] | None:
        """Apply what a person decided at a runtime checkpoint (not a graph interrupt): a
        budget tranche raises the soft limit (never past the hard cap); ``close`` (budget
        or supervisor escalation) ends the run with its best result; ``retry`` resumes."""
        for wait in await self.store.list_waits(self.run.id, "answered"):
            if wait.interrupt_id.startswith("supervisor:"):
                if wait.answer == "close":
                    return {
                        "closed_by": "a person",
                        "after": "supervisor escalation",
                        **(wait.object or {}),
                    }
                await self.store.apply_budget(self.lease, meter.limits, wait.id)
                continue
            if wait.kind != "budget" or not isinstance(wait.answer, dict):
                continue
            dim = str((wait.object or {}).get("dimension"))
            if wait.answer.get("action") == "close" or dim not in meter.limits:
                return {"level": "soft", "dimension": dim, "closed_by": "a person"}
            limits = {d: dict(v) for d, v in meter.limits.items()}
            soft, hard = limits[dim].get("soft"), limits[dim].get("hard")
            raised = float(soft or 0) + float(wait.answer.get("tranche", 0))
            limits[dim]["soft"] = raised if hard is None else min(raised, hard)
            await self.store.apply_budget(self.lease, limits, wait.id)
            meter.limits = limits
        return None

    def _can_remind(self) -> bool:
        """A supervisor message needs a conversation to go into."""
        return self._graph is not None and "messages" in self._graph.channels

    async def _supervisor_stop(self, decision: dict[str, Any]) -> Outcome:
        """The node in flight was cancelled on the supervisor's verdict: close with the
        state of the last checkpoint, or ask a person whether to retry it."""
        state = await self._graph.aget_state(run_config(self.run))
        name = decision["activity"]["name"]
        if decision["verdict"] in ("remind", "change_strategy"):
            return await self._remind(decision, state)
        if decision["verdict"] == "close":
            closed = {"closed_by": "supervisor", "activity": name, "reason": decision["reason"]}
            await self._record_usage(partial=closed)
            return await self._end_completed(state.values, partial=closed)
        silent = decision["activity"].get("silent_for")
        spec = WaitSpec(
            interrupt_id=f"supervisor:{uuid.uuid4().hex[:8]}",
            kind="human",
            object={"activity": name, "reason": decision["reason"]},
            prompt=(
                f"{name} went silent ({silent} s without a sign of life) and the "
                "supervisor stopped it. Retry it from the last checkpoint, or close "
                "the run with the best result?"
            ),
            schema={"enum": ["retry", "close"]},
        )
        return await self._park(Parked([spec]))

    async def _auto_tranche(self, dim: str, values: Any) -> bool:
        """The supervisor's call at a soft limit, within what the operator allows: another
        tranche only if the run made progress since the last checkpoint (its state
        changed), never past the hard cap. Otherwise a person decides."""
        meter, allowed = self.meter, self.settings.budget_auto_tranches
        state = hashlib.sha256(
            json.dumps(to_jsonable(values), sort_keys=True, default=str).encode()
        ).hexdigest()
        progressed = meter.extra.get("checkpoint_state") != state
        granted = int(meter.extra.get("auto_tranches", 0))
        meter.extra["checkpoint_state"] = state
        soft, hard = meter.limits[dim].get("soft"), meter.limits[dim].get("hard")
        if (
            allowed
            and not progressed
            and self._can_remind()
            and not meter.extra.get("strategy_changed")
        ):
            # No progress: once, ask for another approach (a supervisor message in the
            # conversation) with one more tranche; if that changes nothing either, close.
            meter.extra["strategy_changed"] = True
            meter.extra["supervisor_note"] = (
                f"Supervisor: the run reached its soft limit of {dim} without progress since "
                "the last checkpoint. Change strategy: try a different approach."
            )
            self._verdict(
                "budget_soft",
                "change_strategy",
                "no progress since the last checkpoint; asking for another approach",
            )
            return await self._grant(dim, soft, hard, granted)
        if allowed and not progressed:
            # Nothing changed since the last checkpoint: more budget buys nothing.
            self._verdict(
                "budget_soft",
                "close",
                "no progress since the last checkpoint; closing with the best result",
            )
            raise CloseWithBest(
                {
                    "level": "soft",
                    "dimension": dim,
                    "closed_by": "supervisor",
                    "reason": "no progress since the last checkpoint",
                }
            )
        if granted >= allowed or soft is None or soft <= 0:
            self._verdict(
                "budget_soft",
                "escalate",
                f"{granted} of {allowed} automatic tranche(s) used; a person decides",
            )
            return False
        if hard is not None and soft >= hard:
            return False
        self._verdict(
            "budget_soft",
            "continue",
            f"progress since the last checkpoint; tranche {granted + 1} of {allowed}",
        )
        return await self._grant(dim, soft, hard, granted)

    async def _grant(self, dim: str, soft: float | None, hard: float | None, granted: int) -> bool:
        """One tranche: the soft limit doubles, never past the hard cap."""
        if soft is None or (hard is not None and soft >= hard):
            return False
        raised = soft * 2 if hard is None else min(soft * 2, hard)
        limits = {d: dict(v) for d, v in self.meter.limits.items()}
        limits[dim]["soft"] = raised
        self.meter.extra["auto_tranches"] = granted + 1
        await self.store.apply_budget(self.lease, limits, None)
        await self._record_usage()
        return True

    async def _flush_sink(self) -> None:
        if self._sink is not None:
            await self._sink.flush()

    def _verdict(self, trigger: str, verdict: str, reason: str, tier: int = 1) -> None:
        metrics.SUPERVISOR_VERDICTS.labels(tier=str(tier), verdict=verdict).inc()
        if self._sink is not None:
            with contextlib.suppress(SinkClosed):
                self._sink.put(
                    EventDraft(
                        "supervisor.verdict",
                        {
                            "trigger": trigger,
                            "tier": tier,
                            "verdict": verdict,
                            "reason": reason,
                            "cost": {"model_calls": 0, "tokens": 0},
                        },
                    )
                )

    async def _remind(self, decision: dict[str, Any], state: StateSnapshot) -> Outcome:
        """Leave a supervisor message for the next attempt of the stopped node, and give
        the run back to the queue; it goes on from its last checkpoint with the message."""
        goal = next(
            (
                str(m.content)
                for m in state.values.get("messages", [])
                if getattr(m, "type", "") == "human"
            ),
            "the task you were given",
        )
        name, silent = decision["activity"]["name"], decision["activity"].get("silent_for")
        if decision["verdict"] == "remind":
            text = (
                f"Supervisor: {name} went silent for {silent} s and was stopped. "
                f"Remember the goal: {goal}. Keep to it and report progress."
            )
        else:
            text = (
                f"Supervisor: {name} went silent for {silent} s and was stopped. "
                f"Try a different approach to reach the goal: {goal}."
            )
        self.meter.extra["supervisor_note"] = text
        self.meter.extra["reminders"] = int(self.meter.extra.get("reminders", 0)) + 1
        await self._record_usage()
        await self.store.release(self.lease, f"supervisor: {decision['verdict']}")
        return Outcome(None, decision["verdict"])

    async def _budget_stop(self, stop: BudgetStop) -> Outcome:
        breach = stop.breach
        if "closed_by" in breach:  # a person closed it at a checkpoint
            await self._record_usage(partial=breach)
            return await self._end_completed(stop.values, partial=breach)
        metrics.BUDGET_CHECKPOINTS.labels(
            level=str(breach.get("level")), dimension=str(breach.get("dimension"))
        ).inc()
        if self._sink is not None:
            self._sink.put(EventDraft("budget.checkpoint", {**breach, "usage": self.meter.usage()}))
            await self._sink.flush()
        if breach["level"] == "hard":
            await self._record_usage(partial=breach)
            return await self._end_completed(stop.values, partial=breach)
        dim = breach["dimension"]
        limit = self.meter.limits[dim]
        try:
            granted = await self._auto_tranche(dim, stop.values)
        except CloseWithBest as close:
            await self._flush_sink()
            await self._record_usage(partial=close.breach)
            return await self._end_completed(stop.values, partial=close.breach)
        await self._flush_sink()  # the verdict is logged before the run is released/parked
        if granted:
            await self.store.release(self.lease, "budget tranche granted by the supervisor")
            return Outcome(None, "tranche")
        spec = WaitSpec(
            interrupt_id=f"budget:{dim}:{uuid.uuid4().hex[:8]}",
            kind="budget",
            object={"dimension": dim, "used": breach["used"], **limit},
            prompt=(
                f"The run reached its soft limit of {dim} ({breach['used']:g} of "
                f"{breach['limit']:g}). Continue with a tranche, or close with the best result?"
            ),
            schema=tranche_schema(limit, dim),
        )
        await self._record_usage()
        return await self._park(Parked([spec]))

    async def _park(self, parked: Parked) -> Outcome:
        status = await self.store.park(
            self.lease, parked.specs, self.settings.signal_lookback, parked.events
        )
        return Outcome(status, f"{len(parked.specs)} wait(s)")

    async def _end_completed(self, values: Any, partial: dict[str, Any] | None = None) -> Outcome:
        result = to_jsonable(values)
        faults.fault_point(faults.BEFORE_FINISH)
        if partial is not None and isinstance(result, dict):
            result["partial"] = True  # the contract: `result.partial` when closed early
        data: dict[str, Any] = {"status": "completed", "result": result}
        if partial is not None:
            data["partial"] = True
            data["closed_by"] = partial
        await self.store.finish(
            self.lease, RunStatus.COMPLETED, EventDraft("run.completed", data), result=result
        )
        return Outcome(RunStatus.COMPLETED)

    async def _end_failed(self, exc: BaseException) -> Outcome:
        error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)[-8:]),
        }
        log.warning("run %s failed: %s: %s", self.run.id, type(exc).__name__, exc)
        await self.store.finish(
            self.lease,
            RunStatus.FAILED,
            EventDraft(
                "run.failed",
                {"status": "failed", "error": {k: error[k] for k in ("type", "message")}},
            ),
            error=error,
        )
        return Outcome(RunStatus.FAILED, str(exc))

    async def _end_stopped(self, sink: EventSink, translator: Translator) -> Outcome:
        with contextlib.suppress(Exception):
            translator.flush_messages()
            await sink.flush()
        if self.stop_reason == LEASE_LOST:
            return Outcome(None, "lease lost")
        if self.stop_reason == STORE_FAILED:
            # Nothing can be written now; the worker lease will expire and the reaper
            # requeues the run, which resumes from its last checkpoint.
            return Outcome(None, "store failed")
        if self.stop_reason == SUPERVISOR and self.supervisor_decision is not None:
            return await self._supervisor_stop(self.supervisor_decision)
        if self.stop_reason == CANCEL:
            current = await self.store.get_run(self.run.id)
            reason = (current.error or {}).get("reason", "cancelled") if current else "cancelled"
            await self.store.finish(
                self.lease,
                RunStatus.CANCELLED,
                EventDraft("run.cancelled", {"status": "cancelled", "reason": reason}),
                error={"type": "cancelled", "reason": reason},
            )
            return Outcome(RunStatus.CANCELLED, reason)
        await self.store.release(self.lease, self.stop_reason or SHUTDOWN)
        return Outcome(None, "released")


_FINISHED = object()
