"""``/v1/runs``: accept, inspect, list, stream, cancel, await results."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Body, Query, Response
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse

from outlast.api import stream_tokens
from outlast.api.document import declared
from outlast.api.edge import (
    RUN_ID,
    Ctx,
    IdempotencyKey,
    ListCursorParam,
    RunOf,
    list_cursor,
)
from outlast.api.native import accepted, location, run_request, snapshot
from outlast.api.schemas import (
    _ID,
    CancelRequest,
    RunCreate,
    RunPage,
    RunSnapshot,
    StreamToken,
)
from outlast.api.sse import Cursor, counted, stream
from outlast.secretbox import SecretBox
from outlast.service.handle import ended
from outlast.vocabulary import RunStatus

router = APIRouter(prefix="/v1", tags=["runs"])

# One frame of the stream; ``data`` is the event's JSON envelope (seq, type, time,
# run_id, data) or, for a gap or snapshot, what the README describes.
SSE_FRAME = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "the event's seq: resume after it"},
        "event": {"type": "string", "description": "the event's type"},
        "data": {"type": "string"},
        "retry": {"type": "integer"},
    },
}


@router.post(
    "/runs", status_code=202, response_model=RunSnapshot, responses=declared(409, 413, 422, 429)
)
async def create_run(
    ctx: Ctx, response: Response, body: RunCreate, key: IdempotencyKey
) -> RunSnapshot:
    """Accept a run: ``202`` with its identity before any work starts.

    With ``Idempotency-Key``, the same key and body return the same run (also under
    concurrent retries); the same key with another body is refused with ``422``.
    """
    made = await ctx.runs.accept(run_request(body, body.graph, body.thread_id), key=key)
    accepted(response, made.run, made.created)
    return RunSnapshot.of(made.run)


@router.get("/runs/{run_id}", response_model=RunSnapshot, responses=declared(404))
async def get_run(ctx: Ctx, run: RunOf) -> RunSnapshot:
    return await snapshot(ctx, run)


@router.get("/runs", response_model=RunPage, responses=declared(400))
async def list_runs(
    ctx: Ctx,
    before: ListCursorParam,
    thread_id: Annotated[str | None, Query(pattern=_ID)] = None,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> RunPage:
    """Runs, newest first; follow ``next_cursor`` for older ones."""
    # a page the app's threads.search filter thins may come back short; waiting runs
    # say what they wait for here too (a console lists them by wait)
    page = await ctx.runs.page(thread_id=thread_id, status=status, limit=limit, before=before)
    return RunPage(
        runs=[RunSnapshot.of(r, page.of(r)) for r in page.runs],
        next_cursor=list_cursor(page.last) if page.last is not None else None,
    )


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": SSE_FRAME}},
            "description": "the run's events",
        },
        **declared(400, 404, 429),
    },
)
async def run_events(ctx: Ctx, cursor: Cursor, run: RunOf) -> EventSourceResponse:
    """Server-Sent Events: replay after the cursor, then live; ends after the terminal
    event. Closing this stream never cancels the run."""
    shutdown = anyio.Event()
    events = stream(
        ctx.store, run.id, cursor, ctx.settings.stream_max_seconds, stopping=shutdown.is_set
    )
    return EventSourceResponse(
        counted(ctx, run.id, events, shutdown),
        shutdown_event=shutdown,
        shutdown_grace_period=1.0,
        ping=ctx.settings.stream_keepalive,
        send_timeout=30,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.post(
    "/runs/{run_id}/stream-token",
    status_code=201,
    response_model=StreamToken,
    responses=declared(404),
)
async def stream_token(ctx: Ctx, run: RunOf) -> StreamToken:
    """A token that opens this run's events stream for ``OUTLAST_STREAM_TOKEN_TTL``
    seconds: ``GET /v1/runs/{id}/events?stream_token=…``, for a browser's
    ``EventSource``, which cannot send headers. An API key itself is never accepted in a
    URL (it would be written in access logs)."""
    box = SecretBox.from_settings(ctx.settings)
    token, expires = stream_tokens.mint(box, ctx.principal, run.id, ctx.settings.stream_token_ttl)
    return StreamToken(
        token=token,
        expires_at=dt.datetime.fromtimestamp(expires, dt.UTC),
        events_url=f"/v1/runs/{run.id}/events?stream_token={token}",
    )


@router.post(
    "/runs/{run_id}/cancel", status_code=202, response_model=RunSnapshot, responses=declared(404)
)
async def cancel_run(
    ctx: Ctx,
    response: Response,
    run_id: Annotated[str, RUN_ID],
    body: Annotated[CancelRequest | None, Body()] = None,
) -> RunSnapshot:
    """Request cooperative cancellation. Idempotent: a finished run is returned as is."""
    reason = body.reason if body else "cancelled by request"
    cancelled = await (await ctx.runs.handle(run_id, "cancel")).cancel(reason)
    response.headers.update(location(cancelled.id))
    return RunSnapshot.of(cancelled)


@router.get(
    "/runs/{run_id}/result",
    response_model=RunSnapshot,
    responses={202: {"model": RunSnapshot, "description": "not finished yet"}, **declared(404)},
)
async def run_result(
    ctx: Ctx,
    run_id: Annotated[str, RUN_ID],
    wait: Annotated[float, Query(ge=0, description="seconds to wait for the end")] = 0,
) -> JSONResponse:
    """``200`` with the snapshot (and result) once terminal; else ``202`` after at most
    ``wait`` seconds (capped by the server's ``result_wait_max``)."""
    async with ctx.runs.watching(run_id) as handle:
        run = handle.run
        if wait > 0 and not run.terminal:
            now = await handle.settle(ended, min(wait, ctx.settings.result_wait_max))
            run = now.run if now is not None else run
    body = (await snapshot(ctx, run)).model_dump(mode="json")
    if run.terminal:
        return JSONResponse(body, status_code=200)
    return JSONResponse(body, status_code=202, headers={**location(run.id), "Retry-After": "1"})


@router.get("/runs/{run_id}/effects", responses=declared(404))
async def run_effects(ctx: Ctx, run: RunOf) -> dict[str, Any]:
    """The run's effects ledger: each side effect with its key, arguments, status
    (started, done, failed, unknown), result and how many times it was called; whether a
    compensation undoes it (``compensable``), and, on an undoing (key ``undo:<key>``),
    which effect it undoes (``compensates``)."""
    effects = await ctx.store.list_effects(run.id)
    return {"run_id": run.id, "effects": [e.public() for e in effects]}
