"""Run options a LangGraph request sets, as the execution reads them.

The native API has no use for them; LangGraph's clients do: which of LangGraph's stream
modes the run keeps in its log (a stream is a view of the log, so a mode a client will
read live or on a rejoin must be written by the run, not recomputed by the reader),
breakpoints, context, durability, a checkpoint to fork from, a command instead of an
input, a start time (``after_seconds``). Stored with the run (``runs.options``) so every
attempt of the run, on any worker, runs it the same way. Also here: how a rollback puts
a thread back where it was before a run (``undo_run``: ``before_run``,
``restore_as_head``), done by the worker that ends the run (``runtime/execution.py``).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import copy_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.types import Command, Send

from outlast.store import Run

# LangGraph stream modes outlast logs (as `stream` events) only when a run asks for them;
# node updates, `custom` and model messages are always in the log (node.updated, custom,
# message.delta), so `updates` keeps only the parts that carry interrupts.
KEPT_MODES = frozenset({"values", "updates", "tasks", "checkpoints", "debug", "events"})


@dataclass(frozen=True, slots=True)
class RunOptions:
    keep: frozenset[str] = frozenset()
    subgraphs: bool = False
    interrupt_before: Any = None
    interrupt_after: Any = None
    context: dict[str, Any] | None = None
    durability: str | None = None
    checkpoint_id: str | None = None
    command: dict[str, Any] | None = None
    not_before: dt.datetime | None = None  # `after_seconds`, from acceptance
    # a resume's `update` / `goto`, with the ids of the waits whose answers it goes with
    resume_with: dict[str, Any] | None = None

    @classmethod
    def of(cls, run: Run) -> RunOptions:
        raw = run.options or {}
        return cls(
            keep=frozenset(raw.get("keep") or ()) & KEPT_MODES,
            subgraphs=bool(raw.get("subgraphs")),
            interrupt_before=raw.get("interrupt_before"),
            interrupt_after=raw.get("interrupt_after"),
            context=raw.get("context") or None,
            durability=raw.get("durability"),
            checkpoint_id=raw.get("checkpoint_id"),
            command=raw.get("command"),
            not_before=dt.datetime.fromisoformat(raw["not_before"])
            if raw.get("not_before")
            else None,
            resume_with=raw.get("resume_with") or None,
        )

    def stream_modes(self) -> list[str]:
        """What the graph streams: outlast's own modes, plus the kept ones it lacks."""
        modes = ["values", "updates", "custom", "messages", "tasks"]
        modes += [m for m in ("checkpoints", "debug") if m in self.keep]
        return modes

    def astream_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if self.interrupt_before:
            kwargs["interrupt_before"] = self.interrupt_before
        if self.interrupt_after:
            kwargs["interrupt_after"] = self.interrupt_after
        if self.context:
            kwargs["context"] = self.context
        return kwargs

    def first_input(self, given: Any) -> Any:
        """The graph's input on the run's first attempt: a ``Command`` when one was sent."""
        if not self.command:
            return given
        return as_command(self.command, self.command.get("resume"))

    def resuming_with(self, answered: set[str]) -> dict[str, Any] | None:
        """The ``update`` / ``goto`` a resume sent with the answers being consumed now
        (``answered``: wait ids); ``None`` when it went with other answers (an earlier
        resume's, already applied) or there is none."""
        with_ = self.resume_with
        if not with_ or not set(with_.get("waits") or ()) & answered:
            return None
        return with_


def as_command(cmd: dict[str, Any], resume: Any) -> Command[Any]:
    """LangGraph's ``Command`` from its JSON form (``goto`` may name ``Send``s)."""
    goto = cmd.get("goto")
    if goto is not None:
        goto = [_send(g) for g in goto] if isinstance(goto, list) else _send(goto)
    update = cmd.get("update")
    if isinstance(update, list):
        update = [tuple(pair) for pair in update]
    return Command(resume=resume, update=update, goto=goto if goto is not None else ())


def _send(target: Any) -> Any:
    if isinstance(target, dict) and "node" in target:
        return Send(target["node"], target.get("input"))
    return target


# The timer wait of a run accepted with `after_seconds`.
AFTER = "after_seconds"


NO_CHECKPOINT = "no checkpoint"


async def undo_run(graph: Any, saver: Any, thread_id: str, run_id: str) -> None:
    """Put the thread back where it was before run ``run_id``: a copy of the newest
    checkpoint it did not write becomes the head (``restore_as_head``), or the thread is
    emptied when every checkpoint is the run's; nothing when it wrote none. Written
    through ``saver``, the run's leased checkpointer on Postgres: a worker that lost the
    run writes nothing. Done again it finds nothing to undo (the head is then a copy the
    run did not write), so a worker that takes over a run killed mid-rollback redoes it
    safely."""
    before = await before_run(graph, {"configurable": {"thread_id": thread_id}}, run_id)
    if before == NO_CHECKPOINT:
        await saver.adelete_thread(thread_id)
    elif before is not None:
        await restore_as_head(graph, saver, thread_id, before)


async def before_run(graph: Any, config: Any, run_id: str) -> str | None:
    """The newest checkpoint of the thread that ``run_id`` did not write: where the thread
    was before that run. ``None`` when the run wrote none (nothing to undo), and
    ``NO_CHECKPOINT`` when every checkpoint is that run's (the thread was empty)."""
    thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
    wrote = False
    async for state in graph.aget_state_history(thread):
        if (state.metadata or {}).get("run_id") == run_id:
            wrote = True
            continue
        return str(state.config["configurable"]["checkpoint_id"]) if wrote else None
    return NO_CHECKPOINT if wrote else None


async def restore_as_head(graph: Any, saver: Any, thread_id: str, checkpoint_id: str) -> None:
    """Make a copy of checkpoint ``checkpoint_id`` the thread's head, its pending writes
    included (``__copy__`` copies channel values only, and a step whose writes were saved
    before its checkpoint would lose them: a run cancelled between a task's writes and
    its step's checkpoint leaves exactly that). A task's id is derived from its
    checkpoint's id, so each write goes to the copy under the id the same task has there
    (matched by the task's path); kept under the old id it would apply to nothing."""
    source = await saver.aget_tuple(
        {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint_id,
            }
        }
    )
    head = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    if source is None or head is None:
        return
    checkpoint = copy_checkpoint(source.checkpoint)
    checkpoint["id"] = str(uuid6())
    checkpoint["ts"] = dt.datetime.now(dt.UTC).isoformat()
    metadata: Any = {**source.metadata, "source": "update"}
    stored = await saver.aput(head.config, checkpoint, metadata, checkpoint["channel_versions"])
    renamed = await _task_ids(graph, source.config, stored) if source.pending_writes else {}
    by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in source.pending_writes or []:
        by_task[renamed.get(task_id, task_id)].append((channel, value))
    for task_id, writes in by_task.items():
        await saver.aput_writes(stored, writes, task_id)


async def _task_ids(graph: Any, source: Any, copy: Any) -> dict[str, str]:
    """The id each task of ``source`` has in ``copy`` (the same step, another id)."""
    before = await graph.aget_state(source)
    after = await graph.aget_state(copy)
    by_path = {tuple(map(str, t.path)): t.id for t in after.tasks}
    return {t.id: by_path[key] for t in before.tasks if (key := tuple(map(str, t.path))) in by_path}
