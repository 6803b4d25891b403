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
- lease lost (another worker took it over) → stop at once and write nothing more;
- a budget limit or the supervisor → what ``RunPolicy`` (``runtime/policy.py``) answers:
  complete with the best result, park on a wait, or release to the queue. The execution
  asks it at a few points (each stream part, the stop at a breach, an expired activity
  lease, the resume) and never decides about budgets or verdicts itself.

Compensation: a run that ends cancelled or failed with effects to undo
(``@effect(compensate=...)``) records how it will end, undoes them
(``runtime/compensation.py``) and only then ends so; a run claimed with that decision
recorded goes straight to its compensations, never to the graph again.

Recovery: the run's id is put in the checkpoint metadata (``run_id``). If the thread's
latest checkpoint carries this run's id, an earlier attempt got that far: the graph
resumes from it (input ``None``) and finished nodes do not run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import traceback
from typing import Any, Protocol

from langchain_core.messages import HumanMessage
from langgraph.errors import GraphDrained
from langgraph.runtime import RunControl, Runtime
from langgraph.types import Command, StateSnapshot

from outlast import logs, tracing
from outlast.config import Settings
from outlast.credentials import providers
from outlast.errors import LeaseLost
from outlast.graph.registry import GraphRegistry
from outlast.jsonable import to_jsonable
from outlast.nodes.credentials import CREDENTIALS_KEY
from outlast.nodes.effects import LEDGER_KEY
from outlast.runtime import faults
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.compensation import Compensator, compensated
from outlast.runtime.credentials import RunCredentials, needed_in, reference, wait_for
from outlast.runtime.effects import RunLedger
from outlast.runtime.events_mode import EventsTap
from outlast.runtime.keeper import Keeper
from outlast.runtime.options import AFTER, RunOptions, undo_run
from outlast.runtime.outcomes import (
    _PRIORITY,
    CANCEL,
    LEASE_LOST,
    SHUTDOWN,
    STORE_FAILED,
    SUPERVISOR,
    BudgetStop,
    Outcome,
    Parked,
    run_config,
    store_failure,
)
from outlast.runtime.policy import Action, Complete, Park, RunPolicy
from outlast.runtime.recovery import logged_tasks, missing_updates
from outlast.runtime.sink import DUE_HOLD, EventSink, SinkClosed
from outlast.runtime.translate import Translator
from outlast.runtime.waits import spec_from_interrupt
from outlast.secretbox import SecretBox
from outlast.store import (
    ActivityStore,
    EffectStore,
    EventDraft,
    EventStore,
    ItemStore,
    Lease,
    LifecycleStore,
    Run,
    RunStatus,
    RunStore,
    WaitSpec,
    WaitStore,
)
from outlast.store.items import for_principal
from outlast.store.transitions import Ask, Facts, compensates, owes, rolls_back
from outlast.vocabulary import EventType, WaitKind, WaitStatus

log = logging.getLogger(__name__)

# The config key under which LangGraph looks for a parent Runtime (see `_stream`).
CONFIG_KEY_RUNTIME = "__pregel_runtime"


class ExecutionStore(
    LifecycleStore, RunStore, EventStore, WaitStore, ActivityStore, EffectStore, ItemStore, Protocol
):
    """What executing one run uses: all but threads, the outbox, secrets, assistants and
    LangGraph's records (a run's execution never touches them)."""


class Execution:
    def __init__(
        self,
        store: ExecutionStore,
        registry: GraphRegistry,
        settings: Settings,
        run: Run,
        worker_id: str,
    ) -> None:
        self.store = store
        self.registry = registry
        self.settings = settings
        self.run = run
        self.lease = Lease(run.id, worker_id, run.lease_epoch)
        self.control = RunControl()
        self.stop_reason: str | None = None
        # The budget and the supervisor: asked at the points where they have a say.
        self.policy = RunPolicy(
            store, self.lease, settings, run, stop=self.request_stop, can_remind=self._can_remind
        )
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
        run = self.run
        sink = EventSink(
            self.store,
            self.lease,
            lambda exc: self.request_stop(
                LEASE_LOST if isinstance(exc, LeaseLost) else STORE_FAILED
            ),
            max_bytes=self.settings.max_event_bytes,
            carry_window=self.settings.event_carry_window if self.store.carries_events else 0,
            # a finished step's checkpoint follows it unless the run saves only at its exit
            due_hold=0.0 if self._durability() == "exit" else DUE_HOLD,
        )
        self._sink = sink
        self.policy.attach(sink)
        activity = ActivityTracker(
            self.store,
            self.lease,
            sink,
            ttl=self.settings.activity_lease_ttl,
            flush_interval=self.settings.activity_flush_interval,
            usage=self.policy.usage,
            on_expired=self.policy.on_activity_expired if self.settings.supervisor else None,
            max_expected=self.settings.supervisor_max_expected,
        )
        self._activity = activity
        self._loop = asyncio.get_running_loop()
        translator = Translator(sink, self.settings.message_flush_interval, activity)
        try:
            if run.ending is not None:  # decided by an earlier attempt, or by a cancel
                return await self._end_compensated(sink, run.ending)
            self._graph_task = asyncio.create_task(self._stream(sink, translator))
            try:
                result = await self._graph_task
                translator.flush_messages()
                await sink.flush()
                if isinstance(result, Parked):
                    return await self._park(result)
                if isinstance(result, BudgetStop):
                    action = await self.policy.at_budget_stop(result.breach, result.values)
                    return await self._act(action, result.values)
                await self.policy.record()
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
                needed = needed_in(exc)
                if needed is not None:  # a person can supply it: wait, do not fail
                    await self.policy.record()
                    return await self._park(Parked([wait_for(needed)]))
                return await self._end_failed(exc)
        except LeaseLost:
            return Outcome(None, "lease lost")
        finally:
            self._finished = True
            translator.close()
            await activity.close()
            await sink.close()

    def _durability(self, options: RunOptions | None = None) -> str:
        options = options or RunOptions.of(self.run)
        return options.durability or self.settings.durability

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
        # Effects declared with @effect find the run's ledger here, tools their
        # credentials (``outlast.nodes.credential``) there.
        config["configurable"][LEDGER_KEY] = RunLedger(self.store, run.id, sink)
        config["configurable"][CREDENTIALS_KEY] = await RunCredentials.load(
            self.store,
            run,
            SecretBox.from_settings(self.settings),
            providers(tuple(self.settings.credential_providers)),
        )
        self._graph = graph
        options = RunOptions.of(run)
        graph_input: Any = options.first_input(run.input)
        if options.not_before is not None and run.last_seq <= 2:
            due = options.not_before - dt.datetime.now(dt.UTC)
            if due.total_seconds() > 0:
                # `after_seconds`: a timer wait, so the run holds no worker meanwhile
                spec = WaitSpec(interrupt_id=AFTER, kind=WaitKind.TIMER, wake_at=options.not_before)
                return Parked([spec])
        if run.last_seq > 2:
            closed = await self.policy.on_resume()
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
                durability=self._durability(options),
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
                if self.policy.observe(part):
                    # a limit is reached: stop at the next step boundary, with a checkpoint
                    self.control.request_drain("budget")
        except GraphDrained:
            breach = self.policy.breach
            if breach is None or self.stop_reason is not None:
                raise
            return BudgetStop(breach.describe(), final)
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
        answered = await self.store.list_waits(self.run.id, WaitStatus.ANSWERED) if pending else []
        # An auth wait's answer is sealed: the graph gets a reference, opened in memory by
        # ``require_auth``, so the credential never enters a checkpoint.
        resume = {w.interrupt_id: reference(w) for w in answered if w.interrupt_id in pending}
        sink.put(
            EventDraft(
                EventType.RUN_RESUMED,
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
        note = await self.policy.take_note()
        if note is not None:
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

    def _can_remind(self) -> bool:
        """A supervisor message needs a conversation to go into."""
        return self._graph is not None and "messages" in self._graph.channels

    async def _act(self, action: Action, values: Any) -> Outcome:
        """Do what the policy decided; ``values`` is the run's best result."""
        if isinstance(action, Complete):
            return await self._end_completed(values, partial=action.partial)
        if isinstance(action, Park):
            return await self._park(Parked([action.spec]))
        await self.store.release(self.lease, action.reason)
        return Outcome(None, action.detail)

    async def _park(self, parked: Parked) -> Outcome:
        # The next attempt's meter starts from the stored usage: what this one metered
        # since its last activity write must be kept, or the budget forgets it.
        await self.policy.record()
        status = await self.store.park(
            self.lease, parked.specs, self.settings.signal_lookback, parked.events
        )
        return Outcome(status, f"{len(parked.specs)} wait(s)")

    async def _end_completed(self, values: Any, partial: dict[str, Any] | None = None) -> Outcome:
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

    async def _end_failed(self, exc: BaseException) -> Outcome:
        error = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc)[-8:]),
        }
        log.warning("run %s failed: %s: %s", self.run.id, type(exc).__name__, exc)
        await self.policy.record()  # the snapshot shows what the failed run consumed
        if self._sink is not None and await self._owes():
            return await self._end_compensated(
                self._sink, {"status": RunStatus.FAILED, "error": error}
            )
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
        if self.stop_reason == SUPERVISOR and self.policy.stopped is not None:
            # the node in flight was cancelled on the supervisor's verdict
            state = await self._graph.aget_state(run_config(self.run))
            action = await self.policy.after_supervisor_stop(state.values)
            return await self._act(action, state.values)
        await self.policy.record()  # as at a park: the next attempt meters on from it
        if self.stop_reason == CANCEL:
            current = await self.store.get_run(self.run.id)
            # what the cancel asked (the LangGraph face's `interrupt` strategy keeps the
            # state, effects and all)
            ask = Ask.of(current.error if current else None)
            reason = ask.reason
            if await self._owes(ask):
                return await self._end_compensated(sink, ask.ending())
            await self.store.finish(
                self.lease,
                RunStatus.CANCELLED,
                EventDraft(
                    EventType.RUN_CANCELLED, {"status": RunStatus.CANCELLED, "reason": reason}
                ),
                error={"type": "cancelled", "reason": reason},
            )
            return Outcome(RunStatus.CANCELLED, reason)
        await self.store.release(self.lease, self.stop_reason or SHUTDOWN)
        return Outcome(None, "released")

    async def _owes(self, ask: Ask | None = None) -> bool:
        """Whether the run has work to do before it may end as ``ask`` says (by default,
        as it failed): the store's definition, the one the reaper and a release use."""
        effects = await self.store.list_effects(self.run.id)
        return owes(Facts.of(self.run, effects), ask or Ask())

    async def _end_compensated(self, sink: EventSink, ending: dict[str, Any]) -> Outcome:
        """Record how the run ends, undo its effects, put its thread back if a rollback
        was asked, end it so (or park it on a compensation that needs a person)."""
        ending = await self.store.set_ending(self.lease, ending)
        # a compensation defined beside a graph loaded by path is importable once the
        # graph's module is (the servers load every graph at start; this is for the rest)
        with contextlib.suppress(Exception):
            self.registry.get(self.run.graph)
        if compensates(ending):
            done = await Compensator(
                self.store,
                self.run.id,
                sink,
                attempts=self.settings.compensation_attempts,
                backoff=self.settings.compensation_backoff,
                timeout=self.settings.compensation_timeout,
            ).run()
            if isinstance(done, WaitSpec):
                return await self._park(Parked([done]))
        else:  # a person gave the rest up: what was undone before that
            done = compensated(await self.store.list_effects(self.run.id))
        if rolls_back(ending):
            # through the run's own checkpointer: fenced by its lease on Postgres
            saver = self.store.checkpointer(self.lease)
            graph = self.registry.for_run(self.run.graph, saver)
            await undo_run(graph, saver, self.run.thread_id, self.run.id)
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


_FINISHED = object()
