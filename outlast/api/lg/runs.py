"""Runs on the LangGraph face: on a thread and stateless; create (``200`` with the Run,
never ``202``: the JS SDK drops a 202's body), stream, wait, join, join the stream, list,
get, cancel, delete, and cancel in bulk.

Each route that answers with one run (its body, its stream or its final state) sets
root-relative ``Location`` / ``Content-Location`` (the SDKs append them to their base
URL and reconnect through them), and every run-creating POST
honours ``Idempotency-Key`` (LangGraph's own server does not; its clients never send it,
so nothing changes for them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Body, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from sse_starlette import EventSourceResponse, ServerSentEvent

from outlast.api.context import AppContext
from outlast.api.edge import ThreadId, checked_key, ctx_of
from outlast.api.lg.accept import start, started
from outlast.api.lg.access import Found, found, found_of, lg_handle_or_404, lg_run_or_404
from outlast.api.lg.follow import (
    cursor_of,
    final_body,
    keepalive_json,
    requested_modes,
    sse,
    wait_until_over,
)
from outlast.api.lg.schemas import MAX_OFFSET, BulkCancel, RunCreate
from outlast.api.lg.tokens import live_part
from outlast.api.lg.views import run_json
from outlast.errors import UnprocessableRequest
from outlast.service.handle import RunHandle, ended
from outlast.store import LgRun

log = logging.getLogger(__name__)
router = APIRouter(tags=["langgraph"])
RunId = Annotated[str, Path(max_length=100)]
# Background cancels of streams whose client left with on_disconnect=cancel.
_cancels: set[asyncio.Task[Any]] = set()


def _paths(f: Found) -> tuple[str, str]:
    base = f"/threads/{f.lg.thread_id}/runs/{f.lg.id}"
    return base, f"{base}/stream"


def _headers(f: Found, location: str) -> dict[str, str]:
    base, _ = _paths(f)
    return {"Location": location, "Content-Location": base}


def _created_json(f: Found, created: bool) -> dict[str, Any]:
    """The Run a create answers. A run this request made is ``pending``, as on
    LangGraph's server, whose queue has not looked at it yet: here a free worker may
    have claimed it already (the eager start), which the next read shows."""
    body = run_json(f.lg, f.run, f.status)
    if created and body["status"] == "running":
        body["status"] = "pending"
    return body


async def _create(
    request: Request,
    thread_id: str | None,
    body: RunCreate,
    key: str | None,
    streamed: bool = False,
) -> Found:
    return await start(ctx_of(request), thread_id, body, checked_key(key), streamed)


async def _created(
    request: Request, thread_id: str | None, body: RunCreate, key: str | None
) -> JSONResponse:
    """``runs.create``: the Run, ``pending`` if this request made it."""
    f, made = await started(ctx_of(request), thread_id, body, checked_key(key))
    base, _ = _paths(f)
    return JSONResponse(_created_json(f, made), headers={"Content-Location": base})


def _stream_response(
    ctx: AppContext,
    f: Found,
    cursor: int,
    modes: list[str],
    subgraphs: bool,
    cancel_on_gone: bool,
    resume: tuple[int, int] | None = None,
) -> EventSourceResponse:
    shutdown = anyio.Event()
    events = sse(ctx, f, cursor, modes, subgraphs, shutdown.is_set, resume)
    base, stream_path = _paths(f)
    return EventSourceResponse(
        _watched(ctx, f, events, cancel_on_gone),
        shutdown_event=shutdown,
        shutdown_grace_period=1.0,
        ping=ctx.settings.langgraph_heartbeat,
        ping_message_factory=lambda: ServerSentEvent(comment="heartbeat"),
        send_timeout=30,
        headers={
            "Location": stream_path,
            "Content-Location": base,
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        },
    )


async def _watched(
    ctx: AppContext, f: Found, events: AsyncIterator[ServerSentEvent], cancel_on_gone: bool
) -> AsyncIterator[ServerSentEvent]:
    """The stream; with ``on_disconnect=cancel`` (an explicit client choice, never the
    default) a client that leaves before the end cancels the run."""
    ended = False
    try:
        async for item in events:
            yield item
            if item.event == "end":
                ended = True
    finally:
        if cancel_on_gone and not ended:
            _cancel_later(ctx, f, "the client disconnected (on_disconnect=cancel)")


def _cancel_later(ctx: AppContext, f: Found, reason: str) -> None:
    """From a ``finally`` of a stream being closed: the cancel must outlive it."""
    task = asyncio.get_running_loop().create_task(RunHandle(ctx.runs, f.run).cancel(reason))
    _cancels.add(task)
    task.add_done_callback(_cancels.discard)


def _wait_response(ctx: AppContext, f: Found, cancel_on_gone: bool) -> StreamingResponse:
    async def body() -> Any:
        return await final_body(ctx, await wait_until_over(ctx, f))

    work = asyncio.ensure_future(body())

    async def chunks() -> AsyncIterator[bytes]:
        done = False
        try:
            async for chunk in keepalive_json(work, ctx.settings.langgraph_heartbeat):
                yield chunk
            done = True
        finally:
            if cancel_on_gone and not done:
                _cancel_later(ctx, f, "the client disconnected (cancel_on_disconnect)")

    base, _ = _paths(f)
    return StreamingResponse(
        chunks(),
        media_type="application/json",
        headers={"Location": f"{base}/join", "Content-Location": base},
    )


# -- on a thread ---------------------------------------------------------------------


@router.post("/threads/{thread_id}/runs")
async def create_run(
    request: Request,
    thread_id: ThreadId,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    return await _created(request, thread_id, body, idempotency_key)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    request: Request,
    thread_id: ThreadId,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    f = await _create(request, thread_id, body, idempotency_key, streamed=True)
    return _stream_response(
        ctx_of(request),
        f,
        f.lg.from_seq,
        body.modes(),
        body.stream_subgraphs,
        body.on_disconnect == "cancel",
    )


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(
    request: Request,
    thread_id: ThreadId,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    f = await _create(request, thread_id, body, idempotency_key)
    return _wait_response(ctx_of(request), f, body.on_disconnect == "cancel")


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    request: Request,
    thread_id: ThreadId,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    status: Literal["pending", "running", "error", "success", "timeout", "interrupted"]
    | None = None,
    select: Annotated[list[str] | None, Query()] = None,
) -> list[dict[str, Any]]:
    ctx = ctx_of(request)
    await ctx.threads.get(thread_id)
    # Three reads for the whole thread, whatever its number of runs: its LangGraph runs,
    # its outlast runs, the open waits of those that wait.
    stretches = await ctx.store.lg_runs_of_thread(thread_id)
    last: dict[str, LgRun] = {}
    for lg in stretches:
        if lg.run_id not in last or lg.from_seq > last[lg.run_id].from_seq:
            last[lg.run_id] = lg
    # the thread was admitted above: its runs are not asked about one by one
    # room for runs accepted since the first read
    of_thread = await ctx.runs.page(thread_id=thread_id, limit=len(last) + 100, action=None)
    runs = {r.id: r for r in of_thread.runs}
    views = []
    for lg in stretches:
        run = runs.get(lg.run_id)
        if lg.deleted or run is None:
            continue
        f = found_of(lg, run, last[run.id].id, of_thread.of(run))
        view = run_json(lg, run, f.status)
        if status is None or view["status"] == status:
            views.append(view)
    page = views[offset : offset + limit]
    if select:
        page = [{k: v[k] for k in select if k in v} for v in page]
    return page


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(request: Request, thread_id: ThreadId, run_id: RunId) -> JSONResponse:
    f = await lg_run_or_404(ctx_of(request), thread_id, run_id)
    base, _ = _paths(f)
    return JSONResponse(run_json(f.lg, f.run, f.status), headers={"Content-Location": base})


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(
    request: Request,
    thread_id: ThreadId,
    run_id: RunId,
    cancel_on_disconnect: bool = Query(default=False),
) -> StreamingResponse:
    ctx = ctx_of(request)
    f = await lg_run_or_404(ctx, thread_id, run_id)
    return _wait_response(ctx, f, cancel_on_disconnect)


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    request: Request,
    thread_id: ThreadId,
    run_id: RunId,
    last_event_id: Annotated[str | None, Header()] = None,
    stream_mode: Annotated[list[str] | None, Query()] = None,
    stream_subgraphs: bool | None = Query(default=None),
    cancel_on_disconnect: bool = Query(default=False),
) -> EventSourceResponse:
    """Rejoin a run's stream: ``Last-Event-ID`` (``-1`` from the start) replays what came
    after it, then live. The run's own modes and subgraph choice, unless overridden."""
    ctx = ctx_of(request)
    f = await lg_run_or_404(ctx, thread_id, run_id)
    cursor = cursor_of(last_event_id, f.lg.from_seq)
    own = f.lg.kwargs.get("stream_mode") or ["values", "updates", "messages-tuple", "custom"]
    modes = requested_modes(stream_mode, own)
    subgraphs = (
        stream_subgraphs if stream_subgraphs is not None else bool(f.lg.kwargs.get("subgraphs"))
    )
    resume = live_part(last_event_id)
    return _stream_response(ctx, f, cursor, modes, subgraphs, cancel_on_disconnect, resume)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    request: Request,
    thread_id: ThreadId,
    run_id: RunId,
    wait: bool = Query(default=False),
    action: Literal["interrupt", "rollback"] = Query(default="interrupt"),
) -> Response:
    """Cooperative, and it ends: the node in flight is cancelled and the run reaches
    ``cancelled`` (``wait=1`` returns once it has). ``rollback`` also removes the run
    from the LangGraph face (404 afterwards)."""
    ctx = ctx_of(request)
    f, handle = await lg_handle_or_404(ctx, thread_id, run_id, "cancel", {"action": action})
    await _cancel(f, handle, action)
    if not wait and action != "rollback":
        return Response(status_code=202)
    # a rollback is answered once its run has ended, rolled back by its worker (as it
    # always has been: its client reads the thread's state next)
    now = await handle.settle(ended, ctx.settings.result_wait_max)
    if not wait:
        return Response(status_code=202)
    if now is None:
        return Response(status_code=204)
    body = await final_body(ctx, await found(ctx, f.lg, now.run))
    base, _ = _paths(f)
    return JSONResponse(body, headers={"Location": f"{base}/join"})


async def _cancel(f: Found, handle: RunHandle, action: str) -> None:
    """An older stretch of a run ended at its interrupt: interrupting it stops nothing
    (the run goes on as a newer LangGraph run); rolling it back undoes the whole run,
    what came after it included."""
    reason = f"cancelled through the LangGraph API (action={action})"
    if action == "rollback":
        await handle.rollback(reason)
    elif f.latest:
        await handle.cancel(reason)


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(request: Request, thread_id: ThreadId, run_id: RunId) -> Response:
    """Removes the run from the LangGraph face; an active run must be cancelled first
    (deleting it would leave its work running unseen)."""
    ctx = ctx_of(request)
    f = await lg_run_or_404(ctx, thread_id, run_id, "delete")
    await ctx.runs.forget(f.run, still_its_stretch=f.latest)
    return Response(status_code=204)


# -- stateless -----------------------------------------------------------------------


@router.post("/runs")
async def create_stateless(
    request: Request,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> JSONResponse:
    return await _created(request, None, body, idempotency_key)


@router.post("/runs/stream")
async def stream_stateless(
    request: Request,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    f = await _create(request, None, body, idempotency_key, streamed=True)
    return _stream_response(
        ctx_of(request),
        f,
        0,
        body.modes(),
        body.stream_subgraphs,
        body.on_disconnect == "cancel",
    )


@router.post("/runs/wait")
async def wait_stateless(
    request: Request,
    body: Annotated[RunCreate, Body()],
    idempotency_key: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    f = await _create(request, None, body, idempotency_key)
    return _wait_response(ctx_of(request), f, body.on_disconnect == "cancel")


@router.post("/runs/cancel", status_code=204)
async def cancel_many(
    request: Request,
    body: Annotated[BulkCancel, Body()],
    action: Literal["interrupt", "rollback"] = Query(default="interrupt"),
) -> Response:
    """By thread and run ids, or every pending/running run of the caller."""
    ctx = ctx_of(request)
    if (body.run_ids is not None) == (body.status is not None):
        raise UnprocessableRequest("give either thread_id with run_ids, or status")
    if body.run_ids is not None:
        for run_id in body.run_ids:
            f, handle = await lg_handle_or_404(
                ctx, body.thread_id, run_id, "cancel", {"action": action}
            )
            await _cancel(f, handle, action)
        return Response(status_code=204)
    reason = f"cancelled in bulk (action={action})"
    await ctx.runs.cancel_where(body.status or "all", reason, rollback_too=action == "rollback")
    return Response(status_code=204)
