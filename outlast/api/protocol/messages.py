"""The ``messages`` channel: a model's output, as LangChain's content-block events.

The log holds a model's output as ``message.delta`` events (its chunks, coalesced); the
events a client sees (``message-start``, ``content-block-start`` / ``-delta`` /
``-finish``, ``message-finish``) are what LangChain's own bridge makes of those chunks
(``langchain_core``'s ``chunks_to_events``), so the blocks, their indexes and the finished
tool calls are LangChain's, not a second reading of them. The bridge works on a whole
stream; the events one delta adds are those the bridge gives while it reads that delta,
so each delta is translated by running it over the message's chunks so far and keeping
what the last one added. A message is over when the log says so: a delta marked ``last``
(the model said so, or its reply came whole), the update of the node that streamed it,
or the run stopping (an interrupt, its end, a lost attempt).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models._compat_bridge import chunks_to_events
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

from outlast.jsonable import to_jsonable


@dataclass(slots=True)
class _Open:
    namespace: list[str]
    node: str | None
    chunks: list[AIMessageChunk] = field(default_factory=list)
    sent: int = 0  # how many of the bridge's events for these chunks went out


@dataclass(frozen=True, slots=True)
class MessageEvent:
    namespace: list[str]
    data: dict[str, Any]


def _bridge(chunks: list[AIMessageChunk]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The bridge's events for ``chunks``: those it gives while reading them, and those it
    gives once they are over (each block finished, then ``message-finish``)."""
    over = False

    def feed() -> Iterator[ChatGenerationChunk]:
        nonlocal over
        for chunk in chunks:
            yield ChatGenerationChunk(message=chunk)
        over = True

    live: list[dict[str, Any]] = []
    finish: list[dict[str, Any]] = []
    for event in chunks_to_events(feed()):
        (finish if over else live).append(to_jsonable(dict(event)))
    return live, finish


def _chunk(data: dict[str, Any]) -> AIMessageChunk:
    calls = [
        tool_call_chunk(
            name=c.get("name"), args=c.get("args"), id=c.get("id"), index=c.get("index")
        )
        for c in data.get("tool_call_chunks") or []
        if isinstance(c, dict)
    ]
    return AIMessageChunk(
        content=str(data.get("content") or ""), id=str(data.get("id")), tool_call_chunks=calls
    )


class Messages:
    """The messages of one run in flight, as the log has streamed them so far."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}

    def delta(self, data: dict[str, Any]) -> list[MessageEvent]:
        key = str(data.get("id"))
        namespace = split_ns(data.get("ns"))
        message = self._open.get(key)
        if message is None:
            message = self._open[key] = _Open(namespace, data.get("node"))
        message.chunks.append(_chunk(data))
        live, _ = _bridge(message.chunks)
        fresh, message.sent = live[message.sent :], len(live)
        for event in fresh:
            event.setdefault("id", key)  # clients route a message's events by its id
            if event.get("event") == "message-start":
                # where the SDKs look for the node that streamed it
                event["metadata"] = {
                    **(event.get("metadata") or {}),
                    "langgraph_node": message.node,
                }
        out = [MessageEvent(namespace, event) for event in fresh]
        if data.get("last"):
            out += self._finish(key)
        return out

    def node_done(self, namespace: list[str], node: Any) -> list[MessageEvent]:
        """The node's task is over: the messages it streamed are too."""
        keys = [k for k, m in self._open.items() if m.namespace == namespace and m.node == node]
        return [event for key in keys for event in self._finish(key)]

    def stop(self, error: str | None) -> list[MessageEvent]:
        """The run stopped streaming: every open message ends, finished as it stands, or
        with ``error`` when the model's call did not end (the attempt was lost, the run
        failed or was cancelled)."""
        out: list[MessageEvent] = []
        for key in list(self._open):
            if error is None:
                out += self._finish(key)
            else:
                message = self._open.pop(key)
                error_event = {"event": "error", "id": key, "message": error}
                out.append(MessageEvent(message.namespace, error_event))
        return out

    def _finish(self, key: str) -> list[MessageEvent]:
        message = self._open.pop(key)
        _, finish = _bridge(message.chunks)
        return [MessageEvent(message.namespace, {**event, "id": key}) for event in finish]


def split_ns(ns: Any) -> list[str]:
    """A stored namespace (``"outer:<task>|inner:<task>"``) as the protocol's path."""
    return [part for part in str(ns or "").split("|") if part]
