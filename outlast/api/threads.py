"""``/v1/threads``: continue a thread with a new run; inspect its state and history.

A thread is one checkpoint lineage. A new run on it starts from its latest checkpoint;
while another run of the thread is active it is refused with ``409`` unless the request
asks to queue behind it (runs of one thread never execute at the same time).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from outlast.api.context import AppContext
from outlast.api.document import declared
from outlast.api.edge import Ctx, IdempotencyKey, ThreadId
from outlast.api.native import accepted, run_request, snapshot
from outlast.api.schemas import RunSnapshot, ThreadRunCreate
from outlast.errors import OutlastError, RunNotFound
from outlast.graph.factories import Access
from outlast.jsonable import to_jsonable
from outlast.runtime.outcomes import run_config
from outlast.service.authz import Uncovered, configurable_of
from outlast.service.placement import OnThread
from outlast.store import Run
from outlast.store.items import for_principal

router = APIRouter(prefix="/v1/threads", tags=["threads"])


class BadThreadRequest(OutlastError):
    status = 422
    title = "Invalid thread request"


@router.post(
    "/{thread_id}/runs",
    status_code=202,
    response_model=RunSnapshot,
    responses=declared(409, 413, 422, 429),
)
async def create_thread_run(
    ctx: Ctx,
    response: Response,
    thread_id: ThreadId,
    body: ThreadRunCreate,
    key: IdempotencyKey,
) -> RunSnapshot:
    if body.thread_id not in (None, thread_id):
        raise BadThreadRequest("thread_id in the body differs from the one in the path")
    latest = await ctx.store.latest_run(thread_id)
    if latest is not None and not await _graph_readable(ctx, latest):
        latest = None  # a thread the caller may not use: refused on accepting, never described
    request = run_request(body, body.graph or (latest.graph if latest else None), thread_id)
    made = await ctx.runs.accept(request, key=key, placement=OnThread(body.if_busy))
    accepted(response, made.run, made.created)
    run = made.run
    return await snapshot(ctx, run)


async def _graph_readable(ctx: AppContext, latest: Run) -> bool:
    """Whether the thread's latest run may lend its graph to the new run. An uncovered
    ``threads.read`` under ``OUTLAST_AUTH_DEFAULT=deny`` does not refuse the run: the
    client asked for ``threads.create_run``, which its acceptance asks."""
    try:
        return await ctx.runs.owners.run(latest, "read")
    except Uncovered:
        return True


@contextlib.asynccontextmanager
async def _graph_for(ctx: AppContext, thread_id: str) -> AsyncIterator[tuple[Any, Any, Run]]:
    """The graph of the thread's latest run, to read its states (a factory gets that
    run's config), the config that reads them, and that run."""
    latest = await ctx.store.latest_run(thread_id)
    if latest is None or await ctx.runs.owners.thread(thread_id, "read") is None:
        raise RunNotFound(f"no thread {thread_id!r} (it has no runs)")
    use = Access(
        "threads.read",
        ctx.store.checkpointer(),
        for_principal(ctx.store.items, ctx.principal, shared=ctx.authz.shared),
        _reader(dict(run_config(latest)), ctx),
        ctx.principal,
    )
    async with ctx.registry.open(latest.graph, use) as graph:
        yield graph, {"configurable": {"thread_id": thread_id}}, latest


def _reader(config: dict[str, Any], ctx: AppContext) -> dict[str, Any]:
    """A read's config: the run's, with the caller as the user (LangGraph's server gives a
    factory the user who asks)."""
    if ctx.authz.user is None:
        return config
    configurable = {**(config.get("configurable") or {}), **configurable_of(ctx.authz.user)}
    return {**config, "configurable": configurable}


def _state(state: Any) -> dict[str, Any]:
    configurable = state.config.get("configurable", {}) if state.config else {}
    return {
        "checkpoint_id": configurable.get("checkpoint_id"),
        "values": to_jsonable(state.values),
        "next": list(state.next),
        "interrupts": [{"id": i.id, "value": to_jsonable(i.value)} for i in state.interrupts],
        "metadata": to_jsonable(state.metadata),
        "created_at": state.created_at,
    }


@router.get("/{thread_id}/state", responses=declared(404))
async def thread_state(ctx: Ctx, thread_id: ThreadId) -> dict[str, Any]:
    """The thread's latest checkpoint, and its latest run."""
    async with _graph_for(ctx, thread_id) as (graph, config, latest):
        state = await graph.aget_state(config)
    return {
        "thread_id": thread_id,
        "graph": latest.graph,
        "latest_run": {"id": latest.id, "status": latest.status.value},
        **_state(state),
    }


@router.get("/{thread_id}/history", responses=declared(404))
async def thread_history(
    ctx: Ctx,
    thread_id: ThreadId,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    before: Annotated[
        str | None, Query(pattern=r"^[A-Za-z0-9_.:\-]{1,100}$", description="a checkpoint_id")
    ] = None,
) -> dict[str, Any]:
    """Checkpoints, newest first; pass ``next_cursor`` as ``before`` for older ones."""
    before_config = (
        {"configurable": {"thread_id": thread_id, "checkpoint_id": before}} if before else None
    )
    async with _graph_for(ctx, thread_id) as (graph, config, _):
        items = [
            s async for s in graph.aget_state_history(config, limit=limit + 1, before=before_config)
        ]
    page = items[:limit]
    cursor = page[-1].config["configurable"]["checkpoint_id"] if len(items) > limit else None
    return {"thread_id": thread_id, "checkpoints": [_state(s) for s in page], "next_cursor": cursor}
