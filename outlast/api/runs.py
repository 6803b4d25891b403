"""``/v1/runs``: accept, inspect, list, stream, cancel, await results."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Body, Header, Query, Request, Response
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse, ServerSentEvent

from outlast.api.context import AppContext
from outlast.api.edge import (
    LimitReached,
    admit,
    check_size,
    checked_key,
    ctx_of,
    get_run_or_404,
)
from outlast.api.schemas import _ID, CancelRequest, RunCreate, RunPage, RunSnapshot, Status
from outlast.api.sse import parse_cursor, stream
from outlast.errors import InvalidCursor, RunNotFound
from outlast.runtime.accept import RunRequest, new_run
from outlast.runtime.budget import resolve_budget
from outlast.store import ListCursor, Run, RunStatus
from outlast.store.hub import EVENTS, STATUS, wait_for

router = APIRouter(prefix="/v1", tags=["runs"])


def location(run_id: str) -> dict[str, str]:
    path = f"/v1/runs/{run_id}"
    return {"Location": path, "Content-Location": path}


async def snapshot(ctx: AppContext, run: Run) -> RunSnapshot:
    """The run as clients see it; a waiting run says what it waits for."""
    waits = await ctx.store.list_waits(run.id, "open") if run.status == RunStatus.WAITING else []
    return RunSnapshot.of(run, waits)


@router.post("/runs", status_code=202, response_model=RunSnapshot)
async def create_run(
    request: Request,
    response: Response,
    body: RunCreate,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> RunSnapshot:
    """Accept a run: ``202`` with its identity before any work starts.

    With ``Idempotency-Key``, the same key and body return the same run (also under
    concurrent retries); the same key with another body is refused with ``422``.
    """
    ctx = ctx_of(request)
    key = checked_key(idempotency_key)
    new = new_run(
        run_request(ctx, body, body.graph, body.thread_id),
        graphs=ctx.registry.names,
        max_attempts=ctx.settings.max_attempts,
        idempotency_key=key,
        principal=ctx.principal,
    )
    await admit(ctx, new.thread_id if body.thread_id else None, key)
    run, created = await ctx.store.create_run(new)
    accepted(response, run, created)
    return RunSnapshot.of(run)


def run_request(
    ctx: AppContext, body: RunCreate, graph: str | None, thread_id: str | None
) -> RunRequest:
    """The request as the runtime takes it: the budget resolved against the defaults and
    bounded by the operator's caps, and the model (for graphs that call one) resolved
    and checked."""
    check_size(body.input, ctx.settings.max_input_bytes, "input", "max_input_bytes")
    budget = resolve_budget(body.budget, ctx.settings.budget_defaults, ctx.settings.budget_caps)
    name = graph or (ctx.registry.names[0] if ctx.registry.names else None)
    model = None
    if name in ctx.registry.names:  # an unknown name is refused by new_run
        model = ctx.registry.model_for(name, body.config)
    return RunRequest(
        graph=graph,
        input=body.input,
        thread_id=thread_id,
        config=body.config,
        metadata=body.metadata,
        budget=budget,
        model=model,
    )


def accepted(response: Response, run: Run, created: bool) -> None:
    """The headers of a 202: where the run lives, when to look, whether it was a replay."""
    response.headers.update(location(run.id))
    response.headers["Retry-After"] = "1"
    if not created:
        response.headers["Idempotent-Replayed"] = "true"


@router.get("/runs/{run_id}", response_model=RunSnapshot)
async def get_run(request: Request, run_id: str) -> RunSnapshot:
    ctx = ctx_of(request)
    return await snapshot(ctx, await get_run_or_404(ctx, run_id))


def _encode_cursor(pos: int) -> str:
    return base64.urlsafe_b64encode(f"p{pos}".encode()).decode().rstrip("=")


def _decode_cursor(raw: str) -> ListCursor:
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
        pos = text[1:]
        # Bounded, so a forged cursor is refused here, not by the database (integer overflow).
        if not (text.startswith("p") and pos.isascii() and pos.isdigit() and len(pos) < 19):
            raise ValueError(text)
        return ListCursor(int(pos))
    except ValueError:
        raise InvalidCursor("cursor is not one this server returned") from None


@router.get("/runs", response_model=RunPage)
async def list_runs(
    request: Request,
    thread_id: Annotated[str | None, Query(pattern=_ID)] = None,
    status: Status | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=100)] = None,
) -> RunPage:
    """Runs, newest first; follow ``next_cursor`` for older ones."""
    ctx = ctx_of(request)
    runs = await ctx.store.list_runs(
        principal=ctx.principal,
        thread_id=thread_id,
        status=RunStatus(status) if status else None,
        limit=limit + 1,
        before=_decode_cursor(cursor) if cursor else None,
    )
    page = runs[:limit]
    more = len(runs) > limit
    # waiting runs say what they wait for here too (a console lists them by wait),
    # read for the whole page at once
    waits = await ctx.store.open_waits([r.id for r in page if r.status == RunStatus.WAITING])
    return RunPage(
        runs=[RunSnapshot.of(r, waits.get(r.id, [])) for r in page],
        next_cursor=_encode_cursor(page[-1].pos) if more and page else None,
    )


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "the run's events"}},
)
async def run_events(
    request: Request,
    run_id: str,
    after: Annotated[str | None, Query(description="resume after this seq")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Server-Sent Events: replay after the cursor, then live; ends after the terminal
    event. Closing this stream never cancels the run."""
    ctx = ctx_of(request)
    cursor = parse_cursor(last_event_id, after)
    await get_run_or_404(ctx, run_id)
    shutdown = anyio.Event()
    events = stream(
        ctx.store, run_id, cursor, ctx.settings.stream_max_seconds, stopping=shutdown.is_set
    )
    return EventSourceResponse(
        counted(ctx, run_id, events, shutdown),
        shutdown_event=shutdown,
        shutdown_grace_period=1.0,
        ping=ctx.settings.stream_keepalive,
        send_timeout=30,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def counted(
    ctx: AppContext,
    run_id: str,
    events: AsyncIterator[ServerSentEvent | bytes],
    shutdown: anyio.Event,
) -> Any:
    """Hold one of the principal's stream slots while ``events`` is being sent, and end
    the stream cleanly when the server shuts down (the client got a ``retry:`` hint and
    reconnects, to this server's successor or another). Checked before the response
    starts, so a refusal is an ordinary 429, not a broken stream.

    The shutdown is not raced against every event (a task and an ``asyncio.wait`` per
    event were a tenth of the API's CPU with 100 clients): the stream checks it between
    events, and one task per stream wakes it through the hub when the shutdown comes."""
    open_now = ctx.streams.get(ctx.principal, 0)
    if open_now >= ctx.settings.max_streams:
        raise LimitReached(
            f"{open_now} event streams open already (OUTLAST_MAX_STREAMS); close one",
            "max_streams",
            retry_after=2,
        )
    ctx.streams[ctx.principal] = open_now + 1

    def wake(_: object) -> None:
        if shutdown.is_set():
            ctx.store.hub.publish(EVENTS, run_id)

    async def held() -> AsyncIterator[ServerSentEvent | bytes]:
        waker = asyncio.ensure_future(shutdown.wait())
        waker.add_done_callback(wake)
        try:
            async for item in events:
                yield item
                if shutdown.is_set():
                    return
        finally:
            waker.cancel()
            ctx.streams[ctx.principal] -= 1
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()

    return held()


@router.post("/runs/{run_id}/cancel", status_code=202, response_model=RunSnapshot)
async def cancel_run(
    request: Request,
    response: Response,
    run_id: str,
    body: Annotated[CancelRequest | None, Body()] = None,
) -> RunSnapshot:
    """Request cooperative cancellation. Idempotent: a finished run is returned as is."""
    ctx = ctx_of(request)
    await get_run_or_404(ctx, run_id)
    reason = body.reason if body else "cancelled by request"
    run = await ctx.store.request_cancel(run_id, reason)
    if run is None:  # pragma: no cover - checked above
        raise RunNotFound(f"no run {run_id!r}")
    response.headers.update(location(run.id))
    return RunSnapshot.of(run)


@router.get(
    "/runs/{run_id}/result",
    response_model=RunSnapshot,
    responses={202: {"model": RunSnapshot, "description": "not finished yet"}},
)
async def run_result(
    request: Request,
    run_id: str,
    wait: Annotated[float, Query(ge=0, description="seconds to wait for the end")] = 0,
) -> JSONResponse:
    """``200`` with the snapshot (and result) once terminal; else ``202`` after at most
    ``wait`` seconds (capped by the server's ``result_wait_max``)."""
    ctx = ctx_of(request)
    deadline = time.monotonic() + min(wait, ctx.settings.result_wait_max)
    # Watch before the first read, so a status change between the two is not missed.
    with ctx.store.hub.watch(STATUS, run_id) as changed:
        run = await get_run_or_404(ctx, run_id)
        while not run.terminal:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            await wait_for(changed, min(remaining, 5.0))
            changed.clear()
            run = await get_run_or_404(ctx, run_id)
    body = (await snapshot(ctx, run)).model_dump(mode="json")
    if run.terminal:
        return JSONResponse(body, status_code=200)
    return JSONResponse(body, status_code=202, headers={**location(run.id), "Retry-After": "1"})


@router.get("/runs/{run_id}/effects")
async def run_effects(request: Request, run_id: str) -> dict[str, Any]:
    """The run's effects ledger: each side effect with its key, arguments, status
    (started, done, failed, unknown), result and how many times it was called."""
    ctx = ctx_of(request)
    await get_run_or_404(ctx, run_id)
    effects = await ctx.store.list_effects(run_id)
    return {"run_id": run_id, "effects": [e.public() for e in effects]}
