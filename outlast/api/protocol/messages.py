"""The ``messages`` channel: a model's output, as LangChain's content-block events.

The log holds a model's output as ``message.delta`` events (its chunks, coalesced); the
events a client sees (``message-start``, ``content-block-start`` / ``-delta`` /
``-finish``, ``message-finish``) are what LangChain's own bridge makes of those chunks
(``langchain_core``'s ``chunks_to_events``), so the blocks, their indexes and the finished
tool calls are LangChain's, not a second reading of them. The bridge reads a stream of chunks and
keeps what it made of them so far (its blocks, their indexes): it is driven here one chunk
at a time (``_Bridge``), so each chunk is read once, however long the message, and the
events a chunk adds are the bridge's while it reads that chunk. A chunk gives the same
events whether it came from the log (a delta is cut back into the chunks it coalesced)
or live (``api.protocol.tokens``), so a client deduplicating by event id sees one copy.
A message is over when the log says so: a delta marked ``last``
(the model said so, or its reply came whole), the update of the node that streamed it,
or the run stopping (an interrupt, its end, a lost attempt).
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models._compat_bridge import achunks_to_events
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk

from outlast.jsonable import to_jsonable


class _Feed:
    """The bridge's input, handed one chunk at a time: awaiting it suspends the bridge
    until the next chunk is given (nothing else is ever awaited: no event loop runs it)."""

    def __init__(self) -> None:
        self.next: ChatGenerationChunk | None = None
        self.over = False

    def __aiter__(self) -> _Feed:
        return self

    def __anext__(self) -> _Feed:
        return self

    def __await__(self) -> Generator[None, None, ChatGenerationChunk]:
        while self.next is None and not self.over:
            yield  # the bridge wants the next chunk
        if self.next is None:
            raise StopAsyncIteration
        chunk, self.next = self.next, None
        return chunk


class _Bridge:
    """LangChain's bridge over one message's chunks, driven by hand: ``feed`` gives the
    events it makes of one more chunk, ``finish`` those it makes once they are over."""

    def __init__(self) -> None:
        self._feed = _Feed()
        self._events = achunks_to_events(self._feed)
        self._step: Any = None
        # The running loop would adopt the generator at its first step and, were it
        # dropped unfinished (a stream that ends mid-message), close it as a task, while
        # it waits on a chunk; without the loop's hooks it is closed where it is dropped.
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=None, finalizer=None)
        try:
            self._step = self._events.__anext__()
            self._step.send(None)  # to its first wait for a chunk
        finally:
            sys.set_asyncgen_hooks(*hooks)

    def feed(self, chunk: AIMessageChunk) -> list[dict[str, Any]]:
        self._feed.next = ChatGenerationChunk(message=chunk)
        return self._run()

    def finish(self) -> list[dict[str, Any]]:
        self._feed.over = True
        return self._run()

    def _run(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            if self._step is None:
                self._step = self._events.__anext__()
            try:
                self._step.send(None)
            except StopIteration as made:
                out.append(to_jsonable(dict(made.value)))
                self._step = None
                continue
            except StopAsyncIteration:
                self._step = None
                return out
            return out  # suspended: it has read every chunk it was given


@dataclass(slots=True)
class _Open:
    namespace: list[str]
    node: str | None
    bridge: _Bridge = field(default_factory=_Bridge)


@dataclass(frozen=True, slots=True)
class MessageEvent:
    namespace: list[str]
    data: dict[str, Any]


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
    """The messages of one run in flight, as the log (and the live chunks) streamed them
    so far."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}

    def chunk(self, data: dict[str, Any]) -> list[MessageEvent]:
        """The events of one more chunk of a message (``data``: the chunk, in a
        ``message.delta``'s shape)."""
        key = str(data.get("id"))
        message = self._open.get(key)
        if message is None:
            message = self._open[key] = _Open(split_ns(data.get("ns")), data.get("node"))
        fresh = message.bridge.feed(_chunk(data))
        for event in fresh:
            event.setdefault("id", key)  # clients route a message's events by its id
            if event.get("event") == "message-start":
                # where the SDKs look for the node that streamed it
                event["metadata"] = {
                    **(event.get("metadata") or {}),
                    "langgraph_node": message.node,
                }
        return [MessageEvent(message.namespace, event) for event in fresh]

    def is_open(self, message_id: str) -> bool:
        return message_id in self._open

    def last(self, message_id: str) -> list[MessageEvent]:
        """The message's model said it is whole."""
        return self._finish(message_id) if message_id in self._open else []

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
        finish = message.bridge.finish()
        return [MessageEvent(message.namespace, {**event, "id": key}) for event in finish]


def split_ns(ns: Any) -> list[str]:
    """A stored namespace (``"outer:<task>|inner:<task>"``) as the protocol's path."""
    return [part for part in str(ns or "").split("|") if part]
