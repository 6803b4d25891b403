"""LangGraph stream parts → outlast events.

``updates`` become ``node.updated``, ``custom`` becomes ``custom``, and model token
chunks (``messages``) are coalesced per message into ``message.delta`` events at most
once per flush interval: a stream of a thousand tokens is a handful of events, not a
thousand rows. Deltas are flushed before any other event so the log stays in order.
Each chunk is also handed at once to the streams of this process that follow the run
(``runtime.live``); the chunks are numbered, and each delta says which it holds, so a
stream sends every chunk exactly once, live or from the log.

Some parts are not logged as such: ``tasks`` parts start and end a node's tracing span,
its step-duration metric and its activity lease; a ``custom`` part that carries
``outlast.nodes.heartbeat``/``progress`` is a sign of life for the activity tracker; an
``__interrupt__`` update is collected in ``interrupts`` for the execution, which parks
the run on it (the waits' events are the store's).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessageChunk

from outlast import tracing
from outlast.jsonable import to_jsonable
from outlast.nodes.activity import ACTIVITY_KEY
from outlast.runtime import live, metrics
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.sink import EventSink, SinkClosed
from outlast.store import EventDraft, Lease
from outlast.vocabulary import EventType


@dataclass(slots=True)
class _Pending:
    node: str | None
    ns: str
    text: list[str] = field(default_factory=list)  # by chunk
    tool_call_chunks: list[Any] = field(default_factory=list)
    n: list[int] = field(default_factory=list)  # the chunks' numbers in this execution
    tool_ends: list[int] = field(default_factory=list)  # tool_call_chunks after each chunk
    last: bool = False  # the message is whole: its model said so, or it came whole

    def data(self, message_id: str, epoch: int) -> dict[str, Any]:
        """The ``message.delta`` of these chunks. ``epoch`` and ``n`` say which chunks it
        holds (a stream that sent some live sends the others only); ``cuts`` and
        ``tool_cuts`` (where each chunk ends in ``content`` and ``tool_call_chunks``) let
        it send them apart."""
        data: dict[str, Any] = {
            "id": message_id,
            "node": self.node,
            "ns": self.ns,
            "content": "".join(self.text),
            "chunks": len(self.n),
            "epoch": epoch,
            "n": self.n,
        }
        if len(self.n) > 1:
            data["cuts"] = list(itertools.accumulate(len(t) for t in self.text))
        if self.tool_call_chunks:
            data["tool_call_chunks"] = self.tool_call_chunks
            if len(self.n) > 1:
                data["tool_cuts"] = self.tool_ends
        if self.last:
            data["last"] = True
        return data

    def chunks(self, message_id: str, epoch: int) -> list[live.Chunk]:
        tools = [0, *self.tool_ends]
        return [
            live.Chunk(epoch, n, message_id, self.node, self.ns, text, self.tool_call_chunks[a:b])
            for n, text, a, b in zip(self.n, self.text, tools[:-1], tools[1:], strict=True)
        ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text")
        )
    return ""


class Translator:
    """One run's stream parts, fed in order, turned into events on its sink."""

    def __init__(
        self,
        sink: EventSink,
        flush_interval: float,
        activity: ActivityTracker | None = None,
        lease: Lease | None = None,
    ) -> None:
        self._sink = sink
        # the run's chunks go live to this process's streams of it (runtime.live)
        self._run_id = lease.run_id if lease is not None else None
        self._epoch = lease.epoch if lease is not None else 0
        self._next_n = 0  # the next chunk's number
        self._flushed = -1  # the highest chunk number put on the sink
        self._unproduce = live.produce(lease.run_id, self) if lease is not None else lambda: None
        self._activity = activity
        self._interval = flush_interval
        self._pending: dict[str, _Pending] = {}
        self._timer: asyncio.TimerHandle | None = None
        # node tasks in flight: name, monotonic start, tracing span (None without tracing)
        self._steps: dict[str, tuple[str, float, Any]] = {}
        # ids of started tasks by (ns, node) whose update has not come yet: an `updates`
        # part names its node but not its task
        self._unreported: dict[tuple[str, str], list[str]] = {}
        # tasks whose node.updated an earlier attempt logged (set by the execution on a
        # resume): their writes come back as cached updates, logged again only if missing
        self.logged_tasks: set[str] = set()
        self.interrupts: list[Any] = []

    def feed(self, part: dict[str, Any]) -> None:
        kind = part.get("type")
        ns = "|".join(part.get("ns", ()))
        data = part.get("data")
        if kind == "messages":
            self._message(data, ns)
            return
        if kind == "tasks" and isinstance(data, dict):
            self._task(data, ns)
            return
        if kind == "custom" and isinstance(data, dict) and ACTIVITY_KEY in data:
            if self._activity is not None:
                sign = data[ACTIVITY_KEY] or {}
                self._activity.signal(
                    None,
                    "progress",
                    sign.get("note"),
                    sign.get("fraction"),
                    sign.get("probe"),
                    sign.get("expected"),
                )
            return
        self.flush_messages()
        if kind == "updates" and isinstance(data, dict):
            cached = bool((data.get("__metadata__") or {}).get("cached"))
            for node, update in data.items():
                if node == "__interrupt__":
                    if not cached:  # becomes a wait (wait.started) once the run parks
                        self.interrupts.extend(
                            update if isinstance(update, list | tuple) else [update]
                        )
                elif not node.startswith("__"):
                    self._updated(ns, node, update, cached)
        elif kind == "custom":
            self._sink.put(EventDraft(EventType.CUSTOM, {"ns": ns, "data": to_jsonable(data)}))

    def _updated(self, ns: str, node: str, update: Any, cached: bool) -> None:
        """``node.updated``, once per task. A resumed step hands back, as cached updates,
        the writes its tasks saved before the crash; the event of such a task may or may
        not have reached the log (the writes and the event are two transactions, and the
        process can die between them), so it is logged now unless the log has it."""
        waiting = self._unreported.get((ns, node))
        task = waiting.pop(0) if waiting else None
        if cached and task is not None:
            self._replayed(f"{ns}|{task}")
        if cached and (task is None or task in self.logged_tasks):
            return
        data = {"node": node, "ns": ns, "update": to_jsonable(update), "task": task}
        self._sink.put(EventDraft(EventType.NODE_UPDATED, data))

    def _task(self, data: dict[str, Any], ns: str) -> None:
        key = f"{ns}|{data.get('id')}"
        if "input" in data:
            name = str(data.get("name"))
            self._unreported.setdefault((ns, name), []).append(str(data.get("id")))
            self._steps[key] = (name, time.monotonic(), tracing.start_node(name))
            if self._activity is not None:
                self._activity.start(key, name)
            return
        started = self._steps.pop(key, None)
        if started is not None:
            name, began, span = started
            waiting = self._unreported.get((ns, name))
            if waiting and data.get("id") in waiting:  # ended without an update (error)
                waiting.remove(str(data.get("id")))
            metrics.STEP_DURATION.labels(node=name).observe(time.monotonic() - began)
            tracing.end_node(span, data.get("error"))
            if not ns and not any(k.startswith("|") for k in self._steps):
                # the root graph's step is over: its checkpoint write is next (a
                # subgraph's may have none, so its events keep the plain window)
                self._sink.step_over()
        if self._activity is not None:
            self._activity.end(key)

    def _replayed(self, key: str) -> None:
        """A cached task announced itself as started but will not run (and LangGraph sends
        no result for it): it is not in flight, and took no time worth measuring."""
        started = self._steps.pop(key, None)
        if started is not None:
            tracing.end_node(started[2], None)
        if self._activity is not None:
            self._activity.end(key)

    def close(self) -> None:
        """End the spans of nodes that never finished (cancelled, drained, crashed); their
        durations are not observed: they did not complete a step."""
        self._unproduce()
        steps, self._steps = self._steps, {}
        for _, _, span in steps.values():
            tracing.end_node(span, interrupted=True)

    def snapshot(self, pending: bool = True) -> live.Snapshot:
        """For a stream that follows this run live (``runtime.live``)."""
        chunks = (
            [c for k, p in self._pending.items() for c in p.chunks(k, self._epoch)]
            if pending
            else []
        )
        chunks.sort(key=lambda c: c.n)
        written = self._sink.last_seq if self._sink.settled else None
        return live.Snapshot(self._epoch, self._flushed, written, chunks)

    def _message(self, data: Any, ns: str) -> None:
        message, meta = data
        if self._activity is not None:
            # a streamed token is a sign of life of the node that calls the model
            task_id = str((meta or {}).get("langgraph_checkpoint_ns", "")).rsplit(":", 1)[-1]
            self._activity.signal(f"{ns}|{task_id}" if task_id else None, "model")
        if not isinstance(message, BaseMessageChunk):
            if _model_reply(message, meta):
                self._whole(message, meta, ns)
            return  # a node's own messages arrive as node updates; not logged twice
        key = message.id or "?"
        pending = self._pending.get(key)
        if pending is None:
            pending = _Pending(node=(meta or {}).get("langgraph_node"), ns=ns)
            self._pending[key] = pending
        text = _text(message.content)
        tools = to_jsonable(getattr(message, "tool_call_chunks", []) or [])
        n, self._next_n = self._next_n, self._next_n + 1
        pending.text.append(text)
        pending.tool_call_chunks.extend(tools)
        pending.n.append(n)
        pending.tool_ends.append(len(pending.tool_call_chunks))
        group = live.followers(self._run_id) if self._run_id is not None else None
        if group:
            last = getattr(message, "chunk_position", None) == "last"
            chunk = live.Chunk(self._epoch, n, key, pending.node, ns, text, tools, last)
            for follower in list(group):
                follower.push(chunk)
        if getattr(message, "chunk_position", None) == "last":
            pending.last = True
            self.flush_messages()
        elif self._interval <= 0:
            self.flush_messages()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        with contextlib.suppress(SinkClosed):  # the execution is told by the sink itself
            self.flush_messages()

    def flush_messages(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        self._flushed = self._next_n - 1
        for message_id, p in pending.items():
            self._sink.put(EventDraft(EventType.MESSAGE_DELTA, p.data(message_id, self._epoch)))

    def _whole(self, message: Any, meta: Any, ns: str) -> None:
        """A model's reply that was not streamed in chunks (a model without streaming, or
        one called through ``astream_events(version="v3")``, whose content-block events
        LangGraph's chunk handler does not see): logged as one ``message.delta`` marked
        ``last``, so the model's output is in the log however the model was called."""
        self.flush_messages()
        calls = [
            {
                "name": call.get("name"),
                "args": json.dumps(call.get("args") or {}),
                "id": call.get("id"),
                "index": index,
                "type": "tool_call_chunk",
            }
            for index, call in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        data: dict[str, Any] = {
            "id": message.id or "?",
            "node": (meta or {}).get("langgraph_node"),
            "ns": ns,
            "content": _text(message.content),
            "chunks": 1,
            "last": True,
        }
        if calls:
            data["tool_call_chunks"] = calls
        self._sink.put(EventDraft(EventType.MESSAGE_DELTA, data))


def _model_reply(message: Any, meta: Any) -> bool:
    """A whole AI message that a chat model call produced (LangGraph's handler sends it at
    the model's end when no chunk of it was streamed), not one a node returned: the
    model's callbacks carry LangChain's ``ls_model_type``, a node's do not."""
    return isinstance(message, AIMessage) and bool((meta or {}).get("ls_model_type"))
