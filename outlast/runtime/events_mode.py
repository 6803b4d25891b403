"""LangGraph's ``events`` stream mode: LangChain's ``astream_events`` (v2) of the run,
kept in the log like the other modes a LangGraph client asks for.

``astream_events`` runs a graph itself; a run must stream through outlast's one
execution. So the execution does what ``astream_events`` does around its own stream:
LangChain's event handler goes into the run's callbacks, taps the graph's output, and
each event it produces is logged (``stream`` events, mode ``events``). Built on
langchain_core's own handler rather than a copy of it: the events are LangChain's.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from outlast.jsonable import to_jsonable
from outlast.runtime.sink import EventSink, SinkClosed
from outlast.store import EventDraft
from outlast.vocabulary import EventType


class EventsTap:
    def __init__(self, sink: EventSink) -> None:
        from langchain_core.tracers.event_stream import _AstreamEventsCallbackHandler

        self._handler = _AstreamEventsCallbackHandler()
        self._root = uuid.uuid4()
        self._sink = sink
        self._task: asyncio.Task[None] | None = None

    def attach(self, config: dict[str, Any]) -> None:
        config["callbacks"] = [*(config.get("callbacks") or []), self._handler]
        config["run_id"] = self._root

    def wrap(self, parts: AsyncIterator[Any]) -> AsyncIterator[Any]:
        self._task = asyncio.create_task(self._drain())
        tapped: AsyncIterator[Any] = self._handler.tap_output_aiter(self._root, parts)
        return tapped

    async def _drain(self) -> None:
        async for event in self._handler:
            with contextlib.suppress(SinkClosed):  # the execution hears of it itself
                self._sink.put(
                    EventDraft(
                        EventType.STREAM, {"mode": "events", "ns": "", "data": to_jsonable(event)}
                    )
                )

    async def close(self) -> None:
        await self._handler.send_stream.aclose()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
