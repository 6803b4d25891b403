"""``GET /threads/{t}/stream``: every run of a thread, one after the other, including
runs that start later.

Runs of a thread execute one at a time, in acceptance order (``pos``), so the thread's
stream is their logs concatenated; its event ids are ``<pos>-<seq>`` (what LangGraph's
thread stream ids look like, ``^\\d+-\\d+$``), strictly increasing, and a client that
comes back with the last one gets the rest of that run and every later run.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Path, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.lg.follow import requested_modes
from outlast.api.lg.wire import Wire, frame
from outlast.api.sse import Gap
from outlast.api.thread_walk import Begin, Done, runs_of, walk_thread
from outlast.errors import UnprocessableRequest
from outlast.store import Event, Run
from outlast.store.base import system_assistant_id
from outlast.vocabulary import Frame

router = APIRouter(tags=["langgraph"])
_CURSOR = re.compile(r"^(\d{1,18})(?:-(\d{1,18}))?$")
_ALL = {"values", "updates", "messages-tuple", "custom", "tasks", "checkpoints"}


def cursor_of(raw: str | None) -> tuple[int, int] | None:
    """``(pos, seq)`` after which to continue; ``None``: live only (no header)."""
    value = (raw or "").strip()
    if not value:
        return None
    if value in ("-", "-1", "0"):
        return (0, 0)
    match = _CURSOR.match(value)
    if not match:
        raise UnprocessableRequest(
            f"Last-Event-ID {value[:40]!r} is not a thread event id (<run>-<seq>)"
        )
    return int(match.group(1)), int(match.group(2) or 0)


@router.get("/threads/{thread_id}/stream")
async def thread_stream(
    request: Request,
    thread_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")],
    last_event_id: Annotated[str | None, Header()] = None,
    stream_modes: str | None = Query(default=None, max_length=200),
    stream_mode: Annotated[list[str] | None, Query()] = None,
) -> EventSourceResponse:
    """``stream_modes`` (or the SDK's ``stream_mode``): ``run_modes`` (every run event),
    ``lifecycle`` (a ``metadata`` event as each run starts and ends)."""
    ctx = ctx_of(request)
    await ctx.threads.get(thread_id)
    kinds = set(requested_modes([stream_modes] if stream_modes else stream_mode, ["run_modes"]))
    unknown = kinds - {"run_modes", "lifecycle", "state_update"}
    if unknown:
        raise UnprocessableRequest(f"unknown thread stream modes {sorted(unknown)}")
    start = cursor_of(last_event_id)
    shutdown = anyio.Event()
    return EventSourceResponse(
        _follow_thread(ctx, thread_id, start, kinds, shutdown.is_set),
        shutdown_event=shutdown,
        shutdown_grace_period=1.0,
        ping=ctx.settings.langgraph_heartbeat,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=30,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _follow_thread(
    ctx: AppContext,
    thread_id: str,
    start: tuple[int, int] | None,
    kinds: set[str],
    stopping: Callable[[], bool],
) -> AsyncIterator[ServerSentEvent]:
    if start is None:  # live: what happens from now on
        runs = await runs_of(ctx, thread_id)
        start = (runs[-1].pos, runs[-1].last_seq) if runs else (0, 0)
    wire: Wire | None = None
    pos = 0
    steps = walk_thread(ctx, thread_id, start, ctx.settings.stream_max_seconds, stopping)
    async with contextlib.aclosing(steps) as items:
        async for item in items:
            if isinstance(item, Begin):
                wire, pos = _wire(item.run, kinds), item.run.pos
                if item.after == 0 and kinds & {"run_modes", "lifecycle"}:
                    begun = {"run_id": item.run.id, "attempt": max(item.run.attempts, 1)}
                    yield frame("metadata", begun, f"{item.run.pos}-0")
            elif isinstance(item, Done):
                if "lifecycle" in kinds:
                    done = {"status": "run_done", "run_id": item.run.id}
                    yield frame("metadata", done, f"{item.run.pos}-{item.run.last_seq}")
            elif isinstance(item, Gap):
                gap = {
                    "requested_after": item.requested_after,
                    "oldest_available": item.oldest_available,
                }
                yield frame(Frame.GAP, gap, f"{item.run.pos}-{item.resume_at}")
            elif wire is not None and isinstance(item, Event):
                for fr in wire.frames(item, f"{pos}-{item.seq}"):
                    if fr.event != "end":  # a thread's stream goes on after each run
                        yield fr


def _wire(run: Run, kinds: set[str]) -> Wire:
    return Wire(
        run_id=run.id,
        thread_id=run.thread_id,
        graph_id=run.graph,
        assistant_id=system_assistant_id(run.graph),
        modes=_ALL if "run_modes" in kinds else set(),
        subgraphs=True,
        returned=False,
    )
