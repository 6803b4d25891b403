"""``POST /threads/{t}/stream/events``: one filtered subscription to a thread's events, as
SSE (``event:`` the method, ``id:`` the event's durable id, ``data:`` the protocol's
envelope). The body is the protocol's ``EventStreamRequest`` (``channels``,
``namespaces``, ``depth``, ``since``); a reconnecting client sends the last ``seq`` it saw
as ``since`` (or, as ``EventSource`` would, as ``Last-Event-ID``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Body, Header, Path, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Message, Receive, Scope, Send

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.protocol.events import Filter, parse_request, thread_events

router = APIRouter(tags=["langgraph"])


@router.post("/threads/{thread_id}/stream/events")
async def stream_events(
    request: Request,
    thread_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")],
    body: Annotated[dict[str, Any], Body()],
    last_event_id: Annotated[str | None, Header(max_length=40)] = None,
) -> EventSourceResponse:
    """The thread's events matching the request's filter, from after ``since`` (or, with
    no cursor, from the start of the thread's current run), then live, until the client
    goes away."""
    ctx = ctx_of(request)
    if body.get("since") is None and (last_event_id or "").strip().isdigit():
        body = {**body, "since": int(last_event_id or "0")}
    wanted, since = parse_request(body)
    await ctx.threads.get(thread_id)
    shutdown = anyio.Event()
    frames = _frames(ctx, thread_id, since, wanted, shutdown.is_set)
    return _CutAtShutdown(shutdown, frames, ctx.settings.langgraph_heartbeat)


async def _frames(
    ctx: AppContext,
    thread_id: str,
    since: int | None,
    wanted: Filter,
    stopping: Callable[[], bool],
) -> AsyncIterator[ServerSentEvent]:
    async for frame in thread_events(ctx, thread_id, since, wanted, stopping):
        data = json.dumps(frame, separators=(",", ":"), ensure_ascii=False, default=str)
        if frame["type"] == "event":
            # the id is the place (`Last-Event-ID` comes back as `since`), not the name
            yield ServerSentEvent(data=data, event=frame["method"], id=str(frame["seq"]))
        else:
            yield ServerSentEvent(data=data, event="error")


class _CutAtShutdown(EventSourceResponse):
    """At a shutdown the stream is cut, not ended: its last chunk is never sent, so the
    server closes the connection on a body it left unfinished. The protocol's clients take
    a stream that ends cleanly as the end of the run (the SDKs stop there); one that breaks
    they reopen with their cursor, on this server's successor or another."""

    def __init__(
        self, shutdown: anyio.Event, frames: AsyncIterator[ServerSentEvent], heartbeat: float
    ) -> None:
        super().__init__(
            frames,
            shutdown_event=shutdown,
            shutdown_grace_period=1.0,
            ping=heartbeat,
            ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
            send_timeout=30,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
        self._shutdown = shutdown

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def cut(message: Message) -> None:
            last = message["type"] == "http.response.body" and not message.get("more_body")
            if last and self._shutdown.is_set():
                return
            await send(message)

        await super().__call__(scope, receive, cut)
