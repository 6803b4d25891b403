"""One run's stored events → the protocol's events, at read time.

Each stored event becomes zero or more protocol events (``Part``: a channel's method, a
namespace, the data), as a function of that event and of what the run's log said before
it (the messages it has open). The same log therefore always gives the same parts, in the
same order, whichever process reads it and wherever it starts (``prime`` replays what the
cursor skipped), so a part's place, ``(run pos, seq, index)``, is its durable id.

What each stored event becomes:

- ``run.created``: ``lifecycle`` ``started``; ``run.started`` (each claim): ``running``.
- ``message.delta``: ``messages``, LangChain's content-block events (``messages.py``),
  cut back into the chunks it coalesced: each chunk's events are numbered ``(epoch, n,
  index)`` (``Part.chunk``), the same whether the chunk is read here or was sent live
  (``live``: the translator of a stream that follows the run in this process is also
  fed its chunks as the model makes them); a chunk fed live is not fed again when its
  delta is read, it stands there as its events' places (``echo``), so the parts' places
  are the log's alone. The translator knows the execution in progress (``epoch``, from
  ``run.started``) and the chunks of it the log read so far holds (``stored``).
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

from outlast.api.protocol.cursor import PER_CHUNK
from outlast.api.protocol.messages import MessageEvent, Messages, split_ns
from outlast.api.protocol.subgraphs import Change, Subgraphs, graph_name
from outlast.runtime import live
from outlast.runtime.waits import runtime_payload
from outlast.store import Event, Run
from outlast.vocabulary import ANSWERABLE_KINDS, EventType


class Part(NamedTuple):
    method: str
    namespace: list[str]
    data: Any
    chunk: tuple[int, int, int] | None = None  # (epoch, n, index) of a chunk's event
    echo: bool = False  # the place of a chunk's event that went out live already


_LOST = "the attempt streaming this message was lost; the run goes on from its last checkpoint"


# After these, the execution that was in progress streams nothing more.
_EXECUTION_OVER = frozenset(
    {
        EventType.RUN_REQUEUED,
        EventType.RUN_RELEASED,
        EventType.RUN_WAITING,
        EventType.RUN_COMPLETED,
        EventType.RUN_FAILED,
        EventType.RUN_CANCELLED,
    }
)


class RunTranslator:
    """The protocol events of one run's log, fed its events in order."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._messages = Messages()
        self._subgraphs = Subgraphs()
        self.epoch: int | None = None  # the execution in progress, as the log says
        self.stored = -1  # every chunk of it up to this one is in the log read so far
        self._stored_more: set[int] = set()  # and these
        self._echoes: dict[int, int] = {}  # chunks fed live: how many events each became
        self._handlers: dict[str, Callable[[Event], list[Part]]] = {
            EventType.RUN_CREATED: lambda e: [self._lifecycle("started")],
            EventType.RUN_STARTED: self._started,
            EventType.MESSAGE_DELTA: self._delta,
            EventType.NODE_UPDATED: self._node_updated,
            EventType.CUSTOM: lambda e: [
                Part("custom", split_ns(e.data.get("ns")), e.data.get("data"))
            ],
            EventType.STREAM: _kept,
            EventType.WAIT_STARTED: _input_requested,
            EventType.RUN_WAITING: self._waiting,
            EventType.RUN_REQUEUED: self._lost,
            EventType.RUN_RELEASED: self._lost,
            EventType.RUN_COMPLETED: self._completed,
            EventType.RUN_FAILED: self._failed,
            EventType.RUN_CANCELLED: self._cancelled,
        }

    def parts(self, event: Event) -> list[Part]:
        handler = self._handlers.get(event.type)
        if event.type in _EXECUTION_OVER:
            self._execution(None)  # no live chunk belongs after it
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

    def holds(self, n: int) -> bool:
        """Chunk ``n`` of the execution in progress is in the log read so far."""
        return n <= self.stored or n in self._stored_more

    def live(self, chunk: live.Chunk) -> list[Part] | None:
        """A chunk of the execution in progress, as the model made it, before the log has
        it: its events, or None when it cannot go ahead of the log (another execution's;
        under a subgraph the log has not opened, whose lifecycle the log says first; more
        events than a live chunk's room in the cursor)."""
        namespace = split_ns(chunk.ns)
        if (
            chunk.epoch != self.epoch
            or self.holds(chunk.n)
            or chunk.n in self._echoes
            or (namespace and self._subgraphs.would_change(tuple(namespace)))
            # message-start, and a start and a delta per block (its text, each call)
            or 1 + 2 * (1 + len(chunk.tool_call_chunks)) > PER_CHUNK
        ):
            return None
        events = self._messages.chunk(live.chunk_data(chunk))
        self._echoes[chunk.n] = len(events)
        return [
            Part("messages", e.namespace, e.data, (chunk.epoch, chunk.n, i))
            for i, e in enumerate(events)
        ]

    def _execution(self, epoch: int | None) -> None:
        self.epoch, self.stored = epoch, -1
        self._stored_more.clear()
        self._echoes.clear()

    def _delta(self, event: Event) -> list[Part]:
        data = event.data
        numbers, epoch = data.get("n"), data.get("epoch")
        if not numbers or epoch is None:  # a reply that came whole
            out = _parts(self._messages.chunk(data))
        else:
            if self.epoch is None:  # a log from before run.started said its epoch
                self._execution(int(epoch))
            out = []
            for n in numbers:
                out += self._piece(int(epoch), n, data)
        if data.get("last"):
            out += _parts(self._messages.last(str(data.get("id"))))
        return out

    def _piece(self, epoch: int, n: int, data: dict[str, Any]) -> list[Part]:
        """One chunk of a delta: its events, or the places of those that went live."""
        current = epoch == self.epoch
        if current:
            self._stored_more.add(n)
            self.stored = live.advance(self.stored, self._stored_more)
        echoed = self._echoes.pop(n, None) if current else None
        if echoed is not None:
            namespace = split_ns(data.get("ns"))
            return [Part("messages", namespace, None, (epoch, n, i), True) for i in range(echoed)]
        events = self._messages.chunk(live.part(data, [n]))
        return [Part("messages", e.namespace, e.data, (epoch, n, i)) for i, e in enumerate(events)]

    def _started(self, event: Event) -> list[Part]:
        epoch = event.data.get("epoch")
        self._execution(int(epoch) if epoch is not None else None)
        return [self._lifecycle("running", attempt=event.data.get("attempt"))]

    def _lost(self, event: Event) -> list[Part]:
        return _parts(self._messages.stop(_LOST))

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
