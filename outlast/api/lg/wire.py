"""A LangGraph run's stream: its stretch of the durable log, in LangGraph's SSE format.

Every frame is a function of the log up to its event (and the requested modes), so a
client that rejoins from any event id sees exactly what a live client saw: the ids are
the log's seqs (strictly increasing, unlike the in-memory server's ``<ms>-0``), and what
a mode shows (the state after a step, a message chunk, a checkpoint id) was written to
the log by the run, not recomputed by the reader. All but one frame depend on their own
event alone; the legacy ``messages/partial`` carries the message so far, which a rejoin
rebuilds from the earlier deltas first (``Wire.prime``).

A stream from the LangGraph run's start begins with ``metadata`` (``{run_id, attempt}``,
sent by ``follow.py``), whose id is the cursor it starts after, and ends with ``end``
once the LangGraph run is over: the outlast run ended, or it asked a client for
something (that stretch of it is a finished LangGraph run; a resume is the next). A
failure is ``error {error, message}`` before ``end``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sse_starlette import ServerSentEvent

from outlast.store import Event
from outlast.vocabulary import ANSWERABLE_KINDS, EventType

# LangGraph's message chunk shape (AIMessageChunk as the SDKs merge it by id).
_CHUNK_DEFAULTS: dict[str, Any] = {
    "additional_kwargs": {},
    "response_metadata": {},
    "type": "AIMessageChunk",
    "name": None,
    "tool_calls": [],
    "invalid_tool_calls": [],
    "usage_metadata": None,
    "chunk_position": None,
}


# The modes that show model output.
MESSAGE_MODES = frozenset({"messages", "messages-tuple"})

# The LangGraph status a run has when its stream ends with this event.
_END_STATUS: dict[str, str] = {
    EventType.RUN_FAILED: "error",
    EventType.RUN_CANCELLED: "interrupted",
    EventType.RUN_COMPLETED: "success",
}


def ends_stretch(event: Event) -> bool:
    """The event after which a LangGraph run is over."""
    if event.terminal:
        return True
    if event.type == EventType.RUN_WAITING:
        kinds = set(event.data.get("kinds") or ["human"])
        return bool(kinds & ANSWERABLE_KINDS)
    return False


def base_modes(modes: list[str]) -> set[str]:
    """What a client asked for. ``messages-tuple`` is the model's chunks as ``messages``
    events; the legacy ``messages`` mode is ``messages/metadata`` then the message so far
    (``messages/partial``); both come from the same ``message.delta`` log events."""
    return set(modes)


def _json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str)


def frame(name: str, data: Any, seq: int | str | None) -> ServerSentEvent:
    return ServerSentEvent(data=_json(data), event=name, id=str(seq) if seq is not None else None)


@dataclass
class Wire:
    """Turns one LangGraph run's log events into SSE frames for one client."""

    run_id: str  # the LangGraph run id clients know
    thread_id: str
    graph_id: str
    assistant_id: str
    modes: set[str]
    subgraphs: bool
    # the legacy `messages` mode's message so far, by message id
    _partial: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _name(self, mode: str, ns: str) -> str | None:
        if ns and not self.subgraphs:
            return None
        return f"{mode}|{ns}" if ns else mode

    def frames(self, event: Event, ident: str | None = None) -> list[ServerSentEvent]:
        """The event's frames; ``ident`` replaces the seq as their id (the thread stream's
        ids name the run too)."""
        data = event.data
        seq: Any = ident if ident is not None else event.seq
        out: list[ServerSentEvent] = []
        if event.type == EventType.STREAM:
            mode = data.get("mode", "")
            name = self._name(mode, data.get("ns", ""))
            wanted = mode in self.modes or (mode == "updates" and "updates" in self.modes)
            if name is not None and wanted:
                out.append(frame(name, self._stream_payload(mode, data), seq))
        elif event.type == EventType.NODE_UPDATED and "updates" in self.modes:
            name = self._name("updates", data.get("ns", ""))
            if name is not None:
                out.append(frame(name, {data.get("node"): data.get("update")}, seq))
        elif event.type == EventType.MESSAGE_DELTA:
            out.extend(self.message_frames(data, seq))
        elif event.type == EventType.CUSTOM and "custom" in self.modes:
            name = self._name("custom", data.get("ns", ""))
            if name is not None:
                out.append(frame(name, data.get("data"), seq))
        elif event.type == EventType.RUN_FAILED:
            error = data.get("error") or {}
            payload = {"error": error.get("type", "Error"), "message": error.get("message", "")}
            out.append(frame("error", payload, seq))
        if ends_stretch(event):
            out.append(frame("end", {"status": _END_STATUS.get(event.type, "success")}, seq))
        return out

    def message_frames(self, data: dict[str, Any], seq: Any) -> list[ServerSentEvent]:
        """The frames of model output: a ``message.delta``, part of one, or a live chunk."""
        if not self.modes & MESSAGE_MODES:
            return []
        ns = data.get("ns", "")
        name = self._name("messages", ns)
        if name is None:
            return []
        out = []
        if "messages-tuple" in self.modes:
            out.append(frame(name, self._message(data), seq))
        if "messages" in self.modes:
            out.extend(self._legacy(data, ns, seq))
        return out

    def _stream_payload(self, mode: str, data: dict[str, Any]) -> Any:
        payload = data.get("data")
        if mode == "values" and data.get("interrupts"):
            if isinstance(payload, dict):
                payload = {**payload, "__interrupt__": data["interrupts"]}
            else:
                payload = {"__interrupt__": data["interrupts"]}
        if mode == "debug" and isinstance(payload, dict):
            payload = self._debug(payload)
        return payload

    def _debug(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Studio reads ``checkpoint`` and ``parent_checkpoint`` on checkpoint payloads."""
        inner = payload.get("payload")
        if payload.get("type") != "checkpoint" or not isinstance(inner, dict):
            return payload
        enriched = dict(inner)
        for key, source in (("checkpoint", "config"), ("parent_checkpoint", "parent_config")):
            configurable = ((inner.get(source) or {}).get("configurable")) or {}
            enriched[key] = (
                {
                    "thread_id": self.thread_id,
                    "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                    "checkpoint_id": configurable.get("checkpoint_id"),
                }
                if configurable.get("checkpoint_id")
                else None
            )
        return {**payload, "payload": enriched}

    def prime(self, event: Event) -> None:
        """A rejoin from the middle of a message: what it had said before the cursor, so
        ``messages/partial`` goes on from there rather than from the cut."""
        if event.type == EventType.MESSAGE_DELTA:
            self.prime_data(event.data)

    def prime_data(self, data: dict[str, Any]) -> None:
        """Model output the client has (from before the cursor, or sent live to it on an
        earlier connection), for what ``messages/partial`` says next."""
        if "messages" in self.modes:
            self._accumulate(data)

    def _accumulate(self, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        key = str(data.get("id"))
        first = key not in self._partial
        message = self._partial.setdefault(
            key, {**_CHUNK_DEFAULTS, "type": "ai", "id": data.get("id"), "content": ""}
        )
        message["content"] += data.get("content", "")
        if data.get("tool_call_chunks"):
            message["tool_call_chunks"] = [
                *message.get("tool_call_chunks", []),
                *data["tool_call_chunks"],
            ]
        return message, first

    def _legacy(self, data: dict[str, Any], ns: str, seq: Any) -> list[ServerSentEvent]:
        message, first = self._accumulate(data)
        out = []
        suffix = f"|{ns}" if ns else ""
        if first:
            meta = {str(data.get("id")): {"metadata": self._message(data)[1]}}
            out.append(frame(f"messages/metadata{suffix}", meta, seq))
        out.append(frame(f"messages/partial{suffix}", [dict(message)], seq))
        return out

    def _message(self, data: dict[str, Any]) -> list[Any]:
        chunk = {
            **_CHUNK_DEFAULTS,
            "content": data.get("content", ""),
            "id": data.get("id"),
            "tool_call_chunks": data.get("tool_call_chunks") or [],
        }
        meta = {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "assistant_id": self.assistant_id,
            "langgraph_node": data.get("node"),
            "langgraph_checkpoint_ns": data.get("ns", ""),
            "checkpoint_ns": data.get("ns", ""),
        }
        return [chunk, meta]
