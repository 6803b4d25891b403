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

from langchain_core.messages import AIMessageChunk
from sse_starlette import ServerSentEvent

from outlast.jsonable import to_jsonable
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
    # the messages a node returns are sent in the message modes (a run's stream; the
    # thread stream's one id per event leaves them out)
    returned: bool = True
    # the legacy `messages` mode's message so far, by message id
    _partial: dict[str, dict[str, Any]] = field(default_factory=dict)
    # ids of the messages this client was sent in a message mode (or had before its cursor)
    _seen: set[str] = field(default_factory=set)
    # the legacy mode's tool call chunks so far, merged by index, by message id
    _calls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

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
        elif event.type == EventType.NODE_UPDATED:
            out.extend(self.returned_messages(data, seq))
            name = self._name("updates", data.get("ns", ""))
            if name is not None and "updates" in self.modes:
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
        self.saw(data.get("id"))
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

    def returned_messages(self, data: dict[str, Any], seq: Any) -> list[ServerSentEvent]:
        """The messages a node returned that no model streamed (a canned answer, a tool's
        result), as LangGraph's message modes show them at the node's end: whole, once
        each (``messages`` with the message, or ``messages/metadata`` then
        ``messages/complete``). A model's reply was streamed already (``message.delta``,
        same id) and is not sent again.

        LangGraph leaves out the messages the node was given (its whole input state);
        the log does not hold that input, so a node that returns messages it was given
        (the whole list, say) would repeat them: the user's own messages, the most
        likely to be returned again, are left out, and removals are never messages."""
        if not self.returned or not self.modes & MESSAGE_MODES:
            return []
        ns = data.get("ns", "")
        name = self._name("messages", ns)
        out: list[ServerSentEvent] = []
        for message in _returned(data.get("update")):
            key = str(message.get("id"))
            if key in self._seen:
                continue
            self._seen.add(key)
            if name is None:
                continue
            meta = self._meta(data)
            if "messages-tuple" in self.modes:
                out.append(frame(name, [message, meta], seq))
            if "messages" in self.modes:
                suffix = f"|{ns}" if ns else ""
                out.append(frame(f"messages/metadata{suffix}", {key: {"metadata": meta}}, seq))
                out.append(frame(f"messages/complete{suffix}", [message], seq))
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
        ``messages/partial`` goes on from there rather than from the cut, and the
        messages the client was sent before it (not sent again at their node's end)."""
        if event.type == EventType.MESSAGE_DELTA:
            self.prime_data(event.data)
        elif event.type == EventType.NODE_UPDATED:
            self._seen.update(str(m.get("id")) for m in _returned(event.data.get("update")))

    def saw(self, message_id: Any) -> None:
        """The client has (some of) this message already: not sent again whole at its
        node's end."""
        self._seen.add(str(message_id))

    def prime_data(self, data: dict[str, Any]) -> None:
        """Model output the client has (from before the cursor, or sent live to it on an
        earlier connection), for what ``messages/partial`` says next."""
        self.saw(data.get("id"))
        if "messages" in self.modes:
            self._accumulate(data)

    def _accumulate(self, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The message so far (``messages/partial`` shows a message, not a chunk: its
        tool calls parsed from the chunks so far, merged by their index)."""
        key = str(data.get("id"))
        first = key not in self._partial
        message = self._partial.setdefault(
            key,
            {
                **{k: v for k, v in _CHUNK_DEFAULTS.items() if k != "chunk_position"},
                "type": "ai",
                "id": data.get("id"),
                "content": "",
            },
        )
        message["content"] += data.get("content", "")
        if data.get("tool_call_chunks"):
            calls = _merged(self._calls.setdefault(key, []), data["tool_call_chunks"])
            message.update(_parsed(calls))
        return message, first

    def _legacy(self, data: dict[str, Any], ns: str, seq: Any) -> list[ServerSentEvent]:
        message, first = self._accumulate(data)
        out = []
        suffix = f"|{ns}" if ns else ""
        if first:
            meta = {str(data.get("id")): {"metadata": self._meta(data)}}
            out.append(frame(f"messages/metadata{suffix}", meta, seq))
        out.append(frame(f"messages/partial{suffix}", [dict(message)], seq))
        return out

    def _message(self, data: dict[str, Any]) -> list[Any]:
        calls = data.get("tool_call_chunks") or []
        chunk = {
            **_CHUNK_DEFAULTS,
            "content": data.get("content", ""),
            "id": data.get("id"),
            "tool_call_chunks": calls,
            **_parsed(calls),
            "chunk_position": "last" if data.get("last") else None,
        }
        return [chunk, self._meta(data)]

    def _meta(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "graph_id": self.graph_id,
            "assistant_id": self.assistant_id,
            "langgraph_node": data.get("node"),
            "langgraph_checkpoint_ns": data.get("ns", ""),
            "checkpoint_ns": data.get("ns", ""),
        }


# The message types a node's update may return that its message modes show (a user's
# message is left out: see ``Wire.returned_messages``; a removal is not a message).
_SHOWN_TYPES = frozenset({"ai", "AIMessageChunk", "tool", "system", "chat", "function"})


def _returned(update: Any) -> list[dict[str, Any]]:
    """The messages in a node's update (its JSON form), where LangGraph's message
    handler looks for them: the update itself, a list, or the values of a dict (a
    message, or a list of them)."""
    if isinstance(update, dict) and "type" in update and "content" in update:
        candidates: list[Any] = [update]
    elif isinstance(update, list):
        candidates = update
    elif isinstance(update, dict):
        candidates = []
        for value in update.values():
            candidates.extend(value if isinstance(value, list) else [value])
    else:
        return []
    return [
        m
        for m in candidates
        if isinstance(m, dict) and m.get("type") in _SHOWN_TYPES and "content" in m
    ]


def _merged(calls: list[dict[str, Any]], more: list[Any]) -> list[dict[str, Any]]:
    """Tool call chunks added to ``calls`` as LangChain adds message chunks: a chunk with
    the index of one before continues it (its args appended), another starts a call."""
    for raw in more:
        if not isinstance(raw, dict):
            continue
        index = raw.get("index")
        same = next((c for c in calls if index is not None and c.get("index") == index), None)
        if same is None:
            calls.append({**raw, "args": raw.get("args") or ""})
            continue
        same["args"] = (same.get("args") or "") + (raw.get("args") or "")
        for field_name in ("name", "id"):
            if not same.get(field_name) and raw.get(field_name):
                same[field_name] = raw[field_name]
    return calls


def _parsed(calls: list[Any]) -> dict[str, Any]:
    """``tool_calls`` and ``invalid_tool_calls`` of a message with these tool call chunks,
    parsed as LangChain parses them (the arguments so far read as partial JSON)."""
    if not calls:
        return {"tool_calls": [], "invalid_tool_calls": []}
    try:
        chunk = AIMessageChunk(content="", tool_call_chunks=calls)
    except (TypeError, ValueError):
        return {"tool_calls": [], "invalid_tool_calls": []}
    return {
        "tool_calls": to_jsonable(chunk.tool_calls),
        "invalid_tool_calls": to_jsonable(chunk.invalid_tool_calls),
    }
