"""One run's stored events → the protocol's events, at read time.

Each stored event becomes zero or more protocol events (``Part``: a channel's method, a
namespace, the data), as a function of that event and of what the run's log said before
it (the messages it has open). The same log therefore always gives the same parts, in the
same order, whichever process reads it and wherever it starts (``prime`` replays what the
cursor skipped), so a part's place, ``(run pos, seq, index)``, is its durable id.

What each stored event becomes:

- ``run.created``: ``lifecycle`` ``started``; ``run.started`` (each claim): ``running``.
- ``message.delta``: ``messages``, LangChain's content-block events (``messages.py``).
- ``node.updated``: the messages its node streamed finish, then ``updates`` ``{node,
  values}``, then on ``tools`` a ``tool-started`` for each call of an AI message it writes
  and a ``tool-finished`` (or ``tool-error``) for each tool message.
- ``custom``: ``custom``, the payload as written (its ``name`` routes ``custom:<name>``).
- ``stream`` (the modes a run kept): ``values``, ``checkpoints`` (``{id, parent_id, step,
  source}``), ``tasks``.
- ``wait.started`` of a wait a client answers: ``input.requested`` ``{interrupt_id,
  payload}``; the ``run.waiting`` after it: ``lifecycle`` ``interrupted``.
- ``run.completed`` / ``run.failed``: ``lifecycle`` ``completed`` / ``failed`` (``error``).
- ``run.cancelled``: ``lifecycle`` ``failed`` with ``error`` and ``cancelled: true``. The
  protocol's clients end a run on ``completed`` or ``failed`` only, and a cancelled run
  produced no output.
- a subgraph's ``lifecycle`` under its own namespace (``subgraphs.py``): ``started`` before
  its first part, ``completed`` with its task's update in the parent, ``interrupted`` and
  ``running`` around a wait, and the run's end for what is still open.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from outlast.api.protocol.messages import MessageEvent, Messages, split_ns
from outlast.api.protocol.subgraphs import Change, Subgraphs, graph_name
from outlast.runtime.waits import runtime_payload
from outlast.store import Event, Run
from outlast.vocabulary import ANSWERABLE_KINDS, EventType


class Part(NamedTuple):
    method: str
    namespace: list[str]
    data: Any


_LOST = "the attempt streaming this message was lost; the run goes on from its last checkpoint"


class RunTranslator:
    """The protocol events of one run's log, fed its events in order."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._messages = Messages()
        self._subgraphs = Subgraphs()
        self._handlers: dict[str, Callable[[Event], list[Part]]] = {
            EventType.RUN_CREATED: lambda e: [self._lifecycle("started")],
            EventType.RUN_STARTED: self._started,
            EventType.MESSAGE_DELTA: lambda e: _parts(self._messages.delta(e.data)),
            EventType.NODE_UPDATED: self._node_updated,
            EventType.CUSTOM: lambda e: [
                Part("custom", split_ns(e.data.get("ns")), e.data.get("data"))
            ],
            EventType.STREAM: _kept,
            EventType.WAIT_STARTED: _input_requested,
            EventType.RUN_WAITING: self._waiting,
            EventType.RUN_REQUEUED: lambda e: _parts(self._messages.stop(_LOST)),
            EventType.RUN_RELEASED: lambda e: _parts(self._messages.stop(_LOST)),
            EventType.RUN_COMPLETED: self._completed,
            EventType.RUN_FAILED: self._failed,
            EventType.RUN_CANCELLED: self._cancelled,
        }

    def parts(self, event: Event) -> list[Part]:
        handler = self._handlers.get(event.type)
        out: list[Part] = []
        for part in handler(event) if handler is not None else []:
            if part.namespace and part.method != "lifecycle":
                out += self._changes(self._subgraphs.entering(tuple(part.namespace)))
            out.append(part)
        return out

    def _lifecycle(self, status: str, **extra: Any) -> Part:
        data = {"event": status, "graph_name": self.run.graph, "run_id": self.run.id, **extra}
        return Part("lifecycle", [], data)

    def _changes(self, changes: list[Change]) -> list[Part]:
        return [
            Part(
                "lifecycle",
                list(ns),
                {"event": status, "graph_name": graph_name(ns), "run_id": self.run.id, **extra},
            )
            for status, ns, extra in changes
        ]

    def _started(self, event: Event) -> list[Part]:
        return [self._lifecycle("running", attempt=event.data.get("attempt"))]

    def _node_updated(self, event: Event) -> list[Part]:
        data = event.data
        namespace = split_ns(data.get("ns"))
        out = _parts(self._messages.node_done(namespace, data.get("node")))
        done = self._subgraphs.task_done(tuple(namespace), data.get("node"), data.get("task"))
        out += self._changes(done)
        update = {"node": data.get("node"), "values": data.get("update")}
        out.append(Part("updates", namespace, update))
        return out + _tools(namespace, data.get("update"))

    def _waiting(self, event: Event) -> list[Part]:
        out = _parts(self._messages.stop(None))
        if set(event.data.get("kinds") or ["human"]) & ANSWERABLE_KINDS:
            out += self._changes(self._subgraphs.parked())
            out.append(self._lifecycle("interrupted"))
        return out

    def _completed(self, event: Event) -> list[Part]:
        ended = self._changes(self._subgraphs.ended("completed"))
        return [*_parts(self._messages.stop(None)), *ended, self._lifecycle("completed")]

    def _failed(self, event: Event) -> list[Part]:
        error = event.data.get("error") or {}
        text = f"{error.get('type', 'Error')}: {error.get('message', '')}".rstrip(": ")
        ended = self._changes(self._subgraphs.ended("failed", error=text))
        return [*_parts(self._messages.stop(text)), *ended, self._lifecycle("failed", error=text)]

    def _cancelled(self, event: Event) -> list[Part]:
        text = f"cancelled: {event.data.get('reason') or 'cancel requested'}"
        inside = self._changes(self._subgraphs.ended("failed", error=text, cancelled=True))
        ended = self._lifecycle("failed", error=text, cancelled=True)
        return [*_parts(self._messages.stop(text)), *inside, ended]


def _parts(events: list[MessageEvent]) -> list[Part]:
    return [Part("messages", e.namespace, e.data) for e in events]


def _kept(event: Event) -> list[Part]:
    """A LangGraph stream part the run kept for the modes only clients read."""
    data = event.data
    mode, namespace, payload = data.get("mode"), split_ns(data.get("ns")), data.get("data")
    if mode == "values":
        return [Part("values", namespace, payload)]
    if mode == "tasks":
        return [Part("tasks", namespace, payload)]
    if mode == "checkpoints" and isinstance(payload, dict):
        return [Part("checkpoints", namespace, _checkpoint(payload))]
    return []


def _checkpoint(payload: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's ``checkpoints`` part (a state snapshot) as the protocol's light envelope."""
    ids = [((payload.get(k) or {}).get("configurable") or {}) for k in ("config", "parent_config")]
    metadata = payload.get("metadata") or {}
    out: dict[str, Any] = {
        "id": ids[0].get("checkpoint_id"),
        "step": metadata.get("step"),
        "source": metadata.get("source"),
    }
    if ids[1].get("checkpoint_id"):
        out["parent_id"] = ids[1]["checkpoint_id"]
    return out


def _input_requested(event: Event) -> list[Part]:
    """A wait a client answers, as the interrupt it stands for; the runtime's own waits
    (no interrupt value) show their typed payload, as the LangGraph face shows them."""
    wait = event.data.get("wait") or {}
    if wait.get("kind") not in ANSWERABLE_KINDS:
        return []
    interrupt = event.data.get("interrupt") or {}
    payload = interrupt.get("value")
    if payload is None:
        payload = runtime_payload(str(wait.get("kind")), wait.get("object"), wait.get("prompt"))
    interrupt_id = interrupt.get("id") or wait.get("id")
    # ``payload`` is the spec's name; LangGraph's Python SDK reads ``value``
    return [
        Part(
            "input.requested",
            [],
            {"interrupt_id": interrupt_id, "payload": payload, "value": payload},
        )
    ]


def _tools(namespace: list[str], update: Any) -> list[Part]:
    out: list[Part] = []
    for message in _messages_in(update):
        if message.get("type") == "ai":
            for call in message.get("tool_calls") or []:
                started = {
                    "event": "tool-started",
                    "tool_call_id": call.get("id"),
                    "tool_name": call.get("name"),
                    "input": call.get("args"),
                }
                out.append(Part("tools", namespace, started))
        elif message.get("type") == "tool" and message.get("tool_call_id"):
            call_id = message["tool_call_id"]
            if message.get("status") == "error":
                failed = {"event": "tool-error", "tool_call_id": call_id}
                out.append(
                    Part("tools", namespace, {**failed, "message": str(message.get("content"))})
                )
            else:
                done = {"event": "tool-finished", "tool_call_id": call_id, "output": message}
                out.append(Part("tools", namespace, done))
    return out


def _messages_in(update: Any) -> list[dict[str, Any]]:
    """The messages a node's update writes (any state key holding messages)."""
    values = (
        update.values() if isinstance(update, dict) else update if isinstance(update, list) else []
    )
    found: list[dict[str, Any]] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        found += [m for m in items if isinstance(m, dict) and m.get("type") in ("ai", "tool")]
    return found
