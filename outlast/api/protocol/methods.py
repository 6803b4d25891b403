"""What each command does, in the terms of the run service and of the LangGraph face.

Nothing here decides about a run. ``run.start``, ``input.respond`` and ``state.fork``
are LangGraph run requests, started by the run service as the LangGraph face's are
(``service/launch.py``: the assistant, the thread, limits, idempotency, the run
service's accept or its exactly-once resume); ``state.get`` and
``state.listCheckpoints`` are the thread service's state and history reads, written as
LangGraph's states (``api/lgshared.py``, as the LangGraph face writes them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from outlast.api.context import AppContext
from outlast.api.lgshared import Command, RunCreate, launcher, state_json
from outlast.api.protocol import tree
from outlast.api.protocol.params import (
    AgentGetTreeParams,
    InputInjectParams,
    InputRespondParams,
    ListCheckpointsParams,
    RunStartParams,
    StateForkParams,
    StateGetParams,
)
from outlast.errors import NothingToResume, WaitNotOpen
from outlast.service.answers import by_interrupt_id
from outlast.service.launch import Launched
from outlast.store import LgRun, Run, Thread, Wait

# What a run started through the protocol keeps in its log beside what every run logs
# (node updates, custom events, model messages): what the thread stream's channels show
# (values, checkpoints, tasks, and the updates that carry interrupts), whenever a client
# subscribes, before the run or after it.
KEPT = ["values", "updates", "checkpoints", "tasks"]


class Refused(Exception):
    """A command refused in the protocol's own words (its ``ErrorCode``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Call:
    """One command on one thread, as the caller's principal sees it."""

    ctx: AppContext
    thread_id: str
    thread: Thread | None  # None: the caller has no thread of that id (yet)
    params: dict[str, Any]
    key: str | None  # the request's Idempotency-Key (HTTP only)


Handler = Callable[[Call], Awaitable[dict[str, Any]]]


async def _asking(call: Call) -> tuple[Run, list[Wait]] | None:
    """The thread's run that asks a client for something, and what it asks."""
    if call.thread is None:
        return None
    try:
        return await call.ctx.runs.to_resume(call.thread_id, strict=True)
    except NothingToResume:
        return None


async def _replayed(call: Call, sent: Any) -> LgRun | None:
    """The LangGraph run a command with the same ``Idempotency-Key`` made already on this
    thread: a retry answers with it and does nothing. Checked before the thread is read,
    as what the first command did (a resume answered, a run queued) changes what the same
    command would do now. ``sent``: what the run's kwargs keep of the command (its input
    or its resume); the key with another command is refused."""
    if call.key is None:
        return None
    made = await call.ctx.store.lg_run_by_key(call.ctx.principal, call.key)
    if made is None or made.deleted:
        return None
    kept = made.kwargs.get("input"), (made.kwargs.get("command") or {}).get("resume")
    if made.thread_id != call.thread_id or sent not in kept:
        raise Refused(
            "invalid_argument",
            f"Idempotency-Key {call.key!r} was used for another command ({made.id})",
        )
    return made


async def start(
    ctx: AppContext, thread_id: str, body: RunCreate, key: str | None, streamed: bool = True
) -> Launched:
    """A command's LangGraph run request, started (or its resume answered) by the run
    service; ``streamed``: a client reads it as a stream (its modes are kept)."""
    return await launcher(ctx).start(thread_id, body.launch_request(), key, streamed=streamed)


def _assistant_of(call: Call, thread: Thread) -> str:
    """The assistant a command that names none runs: the thread's (its graph's)."""
    named = thread.metadata.get("assistant_id")
    return named if isinstance(named, str) and named else call.ctx.threads.graph_id(thread)


async def run_start(call: Call) -> dict[str, Any]:
    """New input on the thread: the answer to its interrupt when its run asks for one
    (LangGraph's clients send the resume value as ``input``), else a new run, queued
    behind an active one (LangGraph cannot take input into a running graph; its own
    server queues it too)."""
    p = RunStartParams.model_validate(call.params)
    replay = await _replayed(call, p.input)
    if replay is not None:
        return {"run_id": replay.id}
    common: dict[str, Any] = {
        "assistant_id": p.assistant_id,
        "config": p.config,
        "metadata": p.metadata,
        "stream_mode": KEPT,
        "if_not_exists": "create",
    }
    if await _asking(call) is not None:
        body = RunCreate(**common, command=Command(resume=p.input), strict_resume=True)
    else:
        strategy = p.multitask_strategy or "enqueue"
        body = RunCreate(**common, input=p.input, multitask_strategy=strategy)
    try:
        made = await start(call.ctx, call.thread_id, body, call.key, streamed=True)
    except WaitNotOpen as exc:
        raise Refused("no_such_interrupt", str(exc)) from None
    except NothingToResume:
        raise Refused("no_such_interrupt", "the interrupt was answered already") from None
    return {"run_id": made.lg.id}


async def input_respond(call: Call) -> dict[str, Any]:
    """Answer interrupts by id, exactly once (the store's conditional update: of two
    concurrent answers one lands), with ``update`` / ``goto`` kept with the answers and
    applied in the step that resumes."""
    p = InputRespondParams.model_validate(call.params)
    if await _replayed(call, p.answers()) is not None:
        return {}
    pending = await _asking(call)
    if pending is None or call.thread is None:
        raise Refused("no_such_run", f"no run of thread {call.thread_id} waits for input")
    try:  # a protocol answer always names its interrupt, whatever its id looks like
        by_interrupt_id(p.answers(), pending[1])
    except WaitNotOpen as exc:
        raise Refused("no_such_interrupt", str(exc)) from None
    # the run service takes them again, in its exactly-once update
    command = Command(resume=p.answers(), update=p.update, goto=p.goto_json())
    body = RunCreate(
        assistant_id=_assistant_of(call, call.thread),
        command=command,
        config=p.config,
        metadata=p.metadata,
        stream_mode=KEPT,
        strict_resume=True,
    )
    try:
        await start(call.ctx, call.thread_id, body, call.key, streamed=True)
    except WaitNotOpen as exc:  # never asked, or answered meanwhile: nothing was taken
        raise Refused("no_such_interrupt", str(exc)) from None
    except NothingToResume:
        raise Refused("no_such_interrupt", "the interrupt was answered already") from None
    return {}


async def input_inject(call: Call) -> dict[str, Any]:
    InputInjectParams.model_validate(call.params)
    raise Refused(
        "not_supported",
        "input.inject: a LangGraph graph takes no input while it runs; send run.start "
        "(queued after the active run) or input.respond (an interrupt's answer)",
    )


async def state_get(call: Call) -> dict[str, Any]:
    p = StateGetParams.model_validate(call.params)
    if call.thread is None:
        return {"values": {}}  # a thread is made by its first run.start
    ns = "|".join(p.namespace)
    try:
        state = await call.ctx.threads.state(call.thread, {"checkpoint_ns": ns} if ns else None)
    except ValueError as exc:  # LangGraph: no subgraph at that namespace
        raise Refused("no_such_namespace", str(exc)) from None
    body = state_json(state, call.thread_id)
    if ns and not body.get("checkpoint_id"):  # LangGraph reads an unknown one as empty
        raise Refused("no_such_namespace", f"thread {call.thread_id} has no state at {ns!r}")
    values = body["values"]
    if p.keys is not None and isinstance(values, dict):
        values = {k: values[k] for k in p.keys if k in values}
    result: dict[str, Any] = {"values": values}
    if body.get("checkpoint_id"):
        result["checkpoint"] = {"id": body["checkpoint_id"], "ns": ns}
    return result


async def list_checkpoints(call: Call) -> dict[str, Any]:
    p = ListCheckpointsParams.model_validate(call.params)
    if call.thread is None:
        return {"checkpoints": []}
    ns = "|".join(p.namespace)
    found = await call.ctx.threads.history(
        call.thread, limit=p.limit, before=p.before, checkpoint={"checkpoint_ns": ns}
    )
    states = [state_json(s, call.thread_id) for s in found]
    return {"checkpoints": [_summary(s, older) for s, older in _with_older(states)]}


def _with_older(states: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any]]:
    return [(s, states[i + 1] if i + 1 < len(states) else None) for i, s in enumerate(states)]


def _summary(state: dict[str, Any], older: dict[str, Any] | None) -> dict[str, Any]:
    """A ``CheckpointSummary``; ``node_name`` when one node made it (what the checkpoint
    before it had next, when that was one node)."""
    metadata = state.get("metadata") or {}
    summary: dict[str, Any] = {
        "id": state["checkpoint_id"],
        "timestamp": state.get("created_at") or "",
        "step": int(metadata.get("step", 0)),
        "metadata": metadata,
    }
    made_by = (older or {}).get("next") or []
    if metadata.get("source") == "loop" and len(made_by) == 1:
        summary["node_name"] = made_by[0]
    return summary


async def state_fork(call: Call) -> dict[str, Any]:
    """A run from an earlier checkpoint of the thread (LangGraph's time travel), on the
    same thread: its lineage branches there."""
    p = StateForkParams.model_validate(call.params)
    replay = await _replayed(call, p.input)
    if replay is not None:
        return {"run_id": replay.id, "thread_id": call.thread_id}
    if call.thread is None or not await _has_checkpoint(call, p.checkpoint_id):
        raise Refused(
            "no_such_checkpoint", f"thread {call.thread_id} has no checkpoint {p.checkpoint_id}"
        )
    assert call.thread is not None
    body = RunCreate(
        assistant_id=_assistant_of(call, call.thread),
        input=p.input,
        config=p.config,
        checkpoint_id=p.checkpoint_id,
        stream_mode=KEPT,
    )
    made = await start(call.ctx, call.thread_id, body, call.key, streamed=True)
    return {"run_id": made.lg.id, "thread_id": call.thread_id}


async def _has_checkpoint(call: Call, checkpoint_id: str) -> bool:
    saver = call.ctx.store.checkpointer()
    conf = {"thread_id": call.thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
    return await saver.aget_tuple({"configurable": conf}) is not None


async def agent_get_tree(call: Call) -> dict[str, Any]:
    p = AgentGetTreeParams.model_validate(call.params)
    if call.thread is None:
        raise Refused("no_such_run", f"thread {call.thread_id} has no run")
    found = await tree.run_of(call.ctx, call.thread_id, p.run_id)
    if found is None:
        raise Refused("no_such_run", f"thread {call.thread_id} has no run {p.run_id or ''}")
    return {"tree": await tree.of(call.ctx, found)}


METHODS: dict[str, Handler] = {
    "run.start": run_start,
    "input.respond": input_respond,
    "input.inject": input_inject,
    "state.get": state_get,
    "state.listCheckpoints": list_checkpoints,
    "state.fork": state_fork,
    "agent.getTree": agent_get_tree,
}
