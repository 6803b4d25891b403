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

Where the graph starts (fresh, a fork, or resumed from this run's last checkpoint) is
``runtime/start.py``'s; how the run ends, ``runtime/endings.py``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphDrained
from langgraph.runtime import RunControl, Runtime

from outlast import logs, tracing
from outlast.config import Settings
from outlast.credentials import providers
from outlast.errors import GraphLoadError, LeaseLost
from outlast.graph.factories import Access
from outlast.graph.registry import GraphRegistry
from outlast.nodes.credentials import CREDENTIALS_KEY
from outlast.nodes.effects import LEDGER_KEY
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.credentials import RunCredentials, needed_in, wait_for
from outlast.runtime.effects import RunLedger
from outlast.runtime.endings import Endings
from outlast.runtime.events_mode import EventsTap
from outlast.runtime.keeper import Keeper
from outlast.runtime.options import RunOptions
from outlast.runtime.outcomes import (
    _PRIORITY,
    LEASE_LOST,
    SHUTDOWN,
    STORE_FAILED,
    BudgetStop,
    ExecutionStore,
    Outcome,
    Parked,
    run_config,
    store_failure,
)
from outlast.runtime.policy import RunPolicy
from outlast.runtime.sink import DUE_HOLD, EventSink, SinkClosed
from outlast.runtime.start import Input, StartPoint
from outlast.runtime.translate import Translator
from outlast.runtime.waits import spec_from_interrupt
from outlast.secretbox import SecretBox
from outlast.store import (
    Lease,
    Run,
)
from outlast.store.items import for_principal

log = logging.getLogger(__name__)

# The config key under which LangGraph looks for a parent Runtime (see `_stream`).
CONFIG_KEY_RUNTIME = "__pregel_runtime"


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
            store,
            self.lease,
            settings,
            run,
            stop=self.request_stop,
            can_remind=self._can_remind,
            values=self._values,
        )
        self.ends = Endings(store, self.lease, settings, run, registry, self.policy)
        self._activity: ActivityTracker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._graph: Any = None
        self._uses = contextlib.AsyncExitStack()  # the graph opened for the run
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
        sink, activity, translator = self._instruments()
        try:
            if self.run.ending is not None:  # decided by an earlier attempt, or by a cancel
                return await self.ends.compensated(sink, self.run.ending)
            try:
                graph = await self._open_graph(sink)
            except GraphLoadError as exc:  # not importable, or its factory raised
                return await self._failed(exc, sink, translator)
            self._graph_task = asyncio.create_task(self._stream(graph, sink, translator))
            return await self._outcome(self._graph_task, sink, translator)
        except LeaseLost:
            return Outcome(None, "lease lost")
        finally:
            self._finished = True
            try:
                await self._uses.aclose()
            except Exception:  # the run has ended as it did; its factory failed to tidy up
                log.exception("run %s: closing its graph failed", self.run.id)
            translator.close()
            await activity.close()
            await sink.close()

    def _instruments(self) -> tuple[EventSink, ActivityTracker, Translator]:
        """The run's log writer, its activity leases and the stream's translator."""
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
        return (
            sink,
            activity,
            Translator(sink, self.settings.message_flush_interval, activity, self.lease),
        )

    async def _outcome(
        self, graph_task: asyncio.Task[Any], sink: EventSink, translator: Translator
    ) -> Outcome:
        """How the run ends, from how its graph stopped."""
        try:
            result = await graph_task
            translator.flush_messages()
            await sink.flush()
            if isinstance(result, Parked):
                return await self.ends.park(result)
            if isinstance(result, BudgetStop):
                action = await self.policy.at_budget_stop(result.breach, result.values)
                return await self.ends.act(action, result.values)
            await self.policy.record()
            return await self.ends.completed(result)
        except asyncio.CancelledError:
            if not (graph_task.cancelled() and self.stop_reason):
                raise
            return await self._stopped(sink, translator)
        except GraphDrained:
            return await self._stopped(sink, translator)
        except LeaseLost:  # a fenced checkpoint write
            self.request_stop(LEASE_LOST)
            return await self._stopped(sink, translator)
        except SinkClosed:
            return await self._stopped(sink, translator)
        except Exception as exc:
            return await self._failed(exc, sink, translator)

    async def _failed(self, exc: Exception, sink: EventSink, translator: Translator) -> Outcome:
        if store_failure(exc):
            # The database failed under the graph (a checkpoint write, a ledger write):
            # not the run's fault. Whatever was committed stays; the run is requeued
            # from its last checkpoint once its lease runs out.
            self.request_stop(STORE_FAILED)
        if self.stop_reason in (LEASE_LOST, STORE_FAILED):
            return await self._stopped(sink, translator)
        with contextlib.suppress(Exception):
            translator.flush_messages()
            await sink.flush()
        needed = needed_in(exc)
        if needed is not None:  # a person can supply it: wait, do not fail
            await self.policy.record()
            return await self.ends.park(Parked([wait_for(needed)]))
        return await self.ends.failed(exc, sink)

    async def _stopped(self, sink: EventSink, translator: Translator) -> Outcome:
        with contextlib.suppress(Exception):
            translator.flush_messages()
            await sink.flush()
        return await self.ends.stopped(self.stop_reason, sink, self._graph)

    def _durability(self, options: RunOptions | None = None) -> str:
        options = options or RunOptions.of(self.run)
        return options.durability or self.settings.durability

    async def _stream(self, graph: Any, sink: EventSink, translator: Translator) -> Any:
        """The graph from where this run stands to its end, a wait, or a stop; what it
        returns is the final state, or a ``Parked`` / ``BudgetStop``."""
        config = await self._config_for(graph, sink)
        options = RunOptions.of(self.run)
        start = await StartPoint(self.store, self.run, self.policy).find(
            graph, config, options, sink, translator
        )
        if not isinstance(start, Input):
            return start
        return await self._drive(graph, start.value, config, options, sink, translator)

    async def _open_graph(self, sink: EventSink) -> Any:
        """The run's graph on its fenced saver and its principal's items (a factory's
        graph too), opened until the run's end is written (``_execute``'s ``finally``):
        a factory's context manager (its MCP connection, say) outlives the graph's
        stream, which ends at a stop or a wait. Opened and closed in this task, as
        context managers that hold a cancel scope (anyio's) require."""
        run = self.run
        use = Access(
            "threads.create_run",
            self.store.checkpointer(self.lease, sink),
            for_principal(self.store.items, run.principal, shared=self.registry.app_auth),
            run_config(run),
            run.principal,
            RunOptions.of(run).context,
        )
        graph = await self._uses.enter_async_context(self.registry.open(run.graph, use))
        self._graph = graph
        return graph

    async def _config_for(self, graph: Any, sink: EventSink) -> RunnableConfig:
        """The run's config, with the runtime's parts its nodes find there."""
        run = self.run
        config = run_config(run)
        items = graph.store  # the principal's, given to the graph by `_open_graph`
        # LangGraph's `runtime.heartbeat()` inside nodes renews the activity lease: the run's
        # Runtime inherits the heartbeat of the parent runtime seeded here (the seam
        # LangGraph keeps for servers). Under a node idle-timeout policy LangGraph's own
        # heartbeat takes over, as it should.
        # (LangGraph takes the store from that parent runtime, so it goes there too.)
        config["configurable"][CONFIG_KEY_RUNTIME] = Runtime(heartbeat=self._heartbeat, store=items)
        # Effects declared with @effect find the run's ledger here, tools their
        # credentials (``outlast.nodes.credential``) there.
        config["configurable"][LEDGER_KEY] = RunLedger(self.store, self.lease, sink)
        config["configurable"][CREDENTIALS_KEY] = await RunCredentials.load(
            self.store,
            run,
            SecretBox.from_settings(self.settings),
            providers(tuple(self.settings.credential_providers)),
        )
        return config

    async def _drive(
        self,
        graph: Any,
        graph_input: Any,
        config: RunnableConfig,
        options: RunOptions,
        sink: EventSink,
        translator: Translator,
    ) -> Any:
        """Stream the graph into the log, metering it; stop at a budget breach with a
        checkpoint, at interrupts with the waits they open."""
        final: Any = None
        keeper = Keeper(options, sink, translator)
        tap = EventsTap(sink) if "events" in options.keep else None
        if tap is not None:
            tap.attach(config)  # type: ignore[arg-type]
        try:
            parts: Any = graph.astream(
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

    async def _values(self) -> Any:
        """The run's state at its latest checkpoint (the supervisor's model reads its
        conversation), read as at a supervisor's stop (``Endings.stopped``)."""
        return (await self._graph.aget_state(run_config(self.run))).values

    def _can_remind(self) -> bool:
        """A supervisor message needs a conversation to go into."""
        return self._graph is not None and "messages" in self._graph.channels
