"""Where a claimed run's graph starts: the request's input, a fork, or, when an earlier
attempt got that far, this run's last checkpoint.

Recovery: the run's id is put in the checkpoint metadata (``run_id``). If the thread's
latest checkpoint carries this run's id, an earlier attempt got that far: the graph
resumes from it (input ``None``, or the answers to its interrupts) and finished nodes do
not run again; the updates of steps whose events the log lost are logged first
(``runtime/recovery.py``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StateSnapshot

from outlast.runtime.credentials import reference
from outlast.runtime.options import AFTER, RunOptions, as_command
from outlast.runtime.outcomes import BudgetStop, ExecutionStore, Parked
from outlast.runtime.policy import RunPolicy
from outlast.runtime.recovery import logged_tasks, missing_updates
from outlast.runtime.sink import EventSink
from outlast.runtime.translate import Translator
from outlast.store import EventDraft, Run, WaitSpec
from outlast.vocabulary import EventType, WaitKind, WaitStatus


@dataclass(frozen=True, slots=True)
class Input:
    """What the graph is started with (``None`` included: resume from the checkpoint)."""

    value: Any


_FINISHED = object()


class StartPoint:
    def __init__(self, store: ExecutionStore, run: Run, policy: RunPolicy) -> None:
        self.store = store
        self.run = run
        self.policy = policy

    async def find(
        self,
        graph: Any,
        config: RunnableConfig,
        options: RunOptions,
        sink: EventSink,
        translator: Translator,
    ) -> Any:
        """Where the graph starts: an ``Input`` (the request's input, a fork, or, when an
        earlier attempt got this far, ``None`` or the answers to its interrupts); or an end
        reached before any step (a timer wait for ``after_seconds``, a budget closed on
        resume, a run that had finished but for its final write)."""
        run = self.run
        graph_input: Any = options.first_input(run.input)
        if options.not_before is not None and not run.has_history:
            due = options.not_before - dt.datetime.now(dt.UTC)
            if due.total_seconds() > 0:
                # `after_seconds`: a timer wait, so the run holds no worker meanwhile
                spec = WaitSpec(interrupt_id=AFTER, kind=WaitKind.TIMER, wake_at=options.not_before)
                return Parked([spec])
        if run.has_history:
            closed = await self.policy.on_resume()
            if closed is not None:
                state = await graph.aget_state(config)
                return BudgetStop(closed, state.values)
            state = await graph.aget_state(config)
            if state.metadata and state.metadata.get("run_id") == run.id:
                translator.logged_tasks = await logged_tasks(self.store, run)
                for lost in await missing_updates(graph, state, run.id, translator.logged_tasks):
                    sink.put(lost)
                graph_input = await self._continuation(state, sink, options)
                if graph_input is _FINISHED:
                    return state.values  # it had finished; only the final write was lost
                return Input(graph_input)
        if options.checkpoint_id:  # a fork, until the run has its own
            config["configurable"]["checkpoint_id"] = options.checkpoint_id
        return Input(graph_input)

    async def _continuation(
        self, state: StateSnapshot, sink: EventSink, options: RunOptions
    ) -> Any:
        """What to feed the graph to go on from this run's last checkpoint: the answers
        to its pending interrupts (with the ``update`` / ``goto`` their resume sent, in
        the same step), or ``None`` to resume after a crash or a drain."""
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
        with_ = options.resuming_with({w.id for w in answered if w.interrupt_id in pending})
        if with_ is not None:  # a supervisor's note, if any, stays for the next attempt
            return as_command(with_, resume)
        note = await self.policy.take_note()
        if note is not None:
            return Command(
                update={"messages": [HumanMessage(content=note, name="supervisor")]},
                resume=resume or None,
            )
        return Command(resume=resume) if resume else None
