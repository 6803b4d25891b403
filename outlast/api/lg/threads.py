"""Threads on the LangGraph face: create, read, search, patch, delete, copy; the state,
at the head or at a checkpoint, updated as a node; the history.

A thread's status and values are not stored apart from its runs and checkpoints (two
records of one fact drift): they are read from the latest run and the saver each time.
What creating, copying and deleting a thread decide is the thread service's
(``ctx.threads``, ``service/threads.py``); these routes translate HTTP to it and back.
"""

from __future__ import annotations

import logging
import re
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Path, Query, Request, Response
from langgraph.errors import InvalidUpdateError
from langgraph.types import StateUpdate

from outlast.api.context import AppContext
from outlast.api.edge import ThreadId, ctx_of
from outlast.api.lg.access import Conflict, asked_of
from outlast.api.lg.schemas import (
    StateAtCheckpoint,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadSearch,
    ttl_minutes,
    ttl_strategy,
)
from outlast.api.lg.schemas import (
    StateUpdate as StatePost,
)
from outlast.api.lg.thread_ttl import ttl_json
from outlast.api.lg.views import thread_json
from outlast.api.lgshared import HistoryQuery, state_json
from outlast.api.schemas import NO_NUL
from outlast.errors import GraphLoadError, ThreadNotFound, UnprocessableRequest
from outlast.jsonable import to_jsonable
from outlast.runtime.waits import wait_interrupt
from outlast.service.authz import matches
from outlast.service.standing import lg_thread_status
from outlast.store import RunStatus, Thread
from outlast.store.lgthreads import contains

log = logging.getLogger(__name__)
router = APIRouter(tags=["langgraph"])


async def view(ctx: AppContext, thread: Thread) -> dict[str, Any]:
    state = None
    if thread.run_id or thread.metadata:
        try:
            state = await ctx.threads.state(thread)
        except GraphLoadError as exc:
            # a thread of a graph that fails to load is still listed, without its
            # values; its state routes say why
            log.warning("thread %s: %s", thread.thread_id, exc)
    return thread_json(thread, state, await asked_of(ctx, thread))


@router.post("/threads")
async def create_thread(request: Request, body: Annotated[ThreadCreate, Body()]) -> Any:
    """A new thread (with its ``supersteps`` applied, or none), or, under
    ``if_exists=do_nothing``, the caller's existing one."""
    ctx = ctx_of(request)
    thread = await ctx.threads.create(
        body.thread_id,
        dict(body.metadata),
        if_exists=body.if_exists,
        ttl_minutes=ttl_minutes(body.ttl),
        ttl_strategy=ttl_strategy(body.ttl),
        supersteps=[
            [StateUpdate(u.values, u.as_node) for u in step.updates]
            for step in body.supersteps or []
        ],
    )
    return await view(ctx, thread)


@router.get("/threads/{thread_id}")
async def get_thread(
    request: Request,
    thread_id: ThreadId,
    include: Annotated[str | None, Query(max_length=200)] = None,
) -> Any:
    """``include=ttl`` (comma-separated, as the SDK sends it) adds the thread's ``ttl``."""
    ctx = ctx_of(request)
    body = await view(ctx, await ctx.threads.get(thread_id))
    if "ttl" in (include or "").split(","):
        body["ttl"] = await ttl_json(ctx, thread_id)
    return body


@router.post("/threads/search")
async def search_threads(
    request: Request, response: Response, body: Annotated[ThreadSearch | None, Body()] = None
) -> list[dict[str, Any]]:
    """Metadata and values containment, status, ids; ``X-Pagination-Total`` and, when
    there are more, ``X-Pagination-Next`` (the next offset)."""
    ctx = ctx_of(request)
    query = body or ThreadSearch()
    threads = await _searched(ctx, query.metadata, query.model_dump(exclude_none=True))
    if query.ids is not None:
        wanted = set(query.ids)
        threads = [t for t in threads if t.thread_id in wanted]
    views = [await view(ctx, t) for t in threads]
    if query.status is not None:
        views = [v for v in views if v["status"] == query.status]
    if query.values:
        views = [
            v for v in views if isinstance(v["values"], dict) and _has(v["values"], query.values)
        ]
    # no sort_by: the most recently updated first, as LangGraph's server lists them
    key = query.sort_by if "sort_by" in query.model_fields_set else "updated_at"
    views.sort(key=lambda v: (str(v.get(key) or ""), v["thread_id"]))
    if query.sort_order == "desc":
        views.reverse()
    page = views[query.offset : query.offset + query.limit]
    response.headers["X-Pagination-Total"] = str(len(views))
    if query.offset + len(page) < len(views):
        response.headers["X-Pagination-Next"] = str(query.offset + len(page))
    if query.extract:
        for v in page:
            v["extracted"] = {alias: extracted(v, path) for alias, path in query.extract.items()}
    if query.select:
        keep = [*query.select, *(["extracted"] if query.extract else [])]
        page = [{k: v[k] for k in keep if k in v} for v in page]
    return page


_STEP = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def extracted(thread: dict[str, Any], path: str) -> Any:
    """What ``path`` names in a thread (``values.messages[-1].content``: dots between
    keys, brackets around list indices, negative from the end); None where it leads
    nowhere."""
    steps = _STEP.findall(path)
    if not steps:  # names nothing (not the thread itself)
        return None
    here: Any = thread
    for key, index in steps:
        if key:
            here = here.get(key) if isinstance(here, dict) else None
        elif isinstance(here, list) and -len(here) <= int(index) < len(here):
            here = here[int(index)]
        else:
            here = None
        if here is None:
            return None
    return here


async def _searched(
    ctx: AppContext, metadata: dict[str, Any] | None, asked: dict[str, Any]
) -> list[Thread]:
    """The caller's threads with ``metadata``, less those the app's ``threads.search``
    handler filters out (a search and a count see the same threads)."""
    wanted = await ctx.authz.check("threads", "search", asked)
    threads = await ctx.store.lg_threads(principal=ctx.runs.owners.scope, metadata=metadata)
    return [t for t in threads if matches(t.metadata, wanted)]


def _has(values: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return contains(values, wanted)


@router.post("/threads/count")
async def count_threads(
    request: Request, body: Annotated[ThreadCount | None, Body()] = None
) -> int:
    ctx = ctx_of(request)
    query = body or ThreadCount()
    threads = await _searched(ctx, query.metadata, query.model_dump(exclude_none=True))
    if query.status is None and not query.values:
        return len(threads)
    views = [await view(ctx, t) for t in threads]
    return sum(
        1
        for v in views
        if (query.status is None or v["status"] == query.status)
        and (
            not query.values or (isinstance(v["values"], dict) and _has(v["values"], query.values))
        )
    )


@router.patch("/threads/{thread_id}")
async def patch_thread(
    request: Request,
    thread_id: ThreadId,
    body: Annotated[ThreadPatch, Body()],
    prefer: Annotated[str | None, Header()] = None,
) -> Any:
    ctx = ctx_of(request)
    asked: dict[str, Any] = {"metadata": dict(body.metadata)}
    await ctx.threads.get(thread_id, "update", asked)  # may stamp the metadata
    thread = await ctx.store.lg_set_thread_metadata(thread_id, dict(asked.get("metadata") or {}))
    if thread is None:
        thread = await ctx.threads.get(thread_id)
    if body.ttl is not None:  # a new TTL, counted from now
        await ctx.store.lg_set_thread_ttl(thread_id, ttl_minutes(body.ttl), ttl_strategy(body.ttl))
    if prefer and "return=minimal" in prefer:
        return Response(status_code=204)
    return await view(ctx, await ctx.threads.get(thread_id))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(request: Request, thread_id: ThreadId) -> Response:
    """The thread, its runs and their logs, and its checkpoints. A run still executing
    loses its lease (its row is gone) and its worker stops writing."""
    await ctx_of(request).threads.delete(thread_id)
    return Response(status_code=204)


@router.post("/threads/{thread_id}/copy")
async def copy_thread(request: Request, thread_id: ThreadId) -> Any:
    """A new thread with the same metadata and the same checkpoints (the runs and their
    logs stay with the original). A thread the caller cannot see (none, or another
    user's) is a ``409``, as on LangGraph's server: the copy is what conflicts, and the
    answer says no more about the original than a missing one does."""
    ctx = ctx_of(request)
    try:
        copied = await ctx.threads.copy(thread_id)  # read with its original's graph
    except ThreadNotFound:
        raise Conflict(f"Thread {thread_id} cannot be copied: not found") from None
    # the new thread as it was made (its state is read with GET, as on LangGraph's server)
    body = thread_json(copied, await ctx.threads.state(copied))
    for key in ("values", "error", "interrupts"):
        body.pop(key, None)
    body["config"] = {}
    return body


@router.get("/threads/{thread_id}/state")
async def get_state(
    request: Request, thread_id: ThreadId, subgraphs: bool = Query(default=False)
) -> dict[str, Any]:
    ctx = ctx_of(request)
    thread = await ctx.threads.get(thread_id)
    body = state_json(await ctx.threads.state(thread, subgraphs=subgraphs), thread_id)
    asked = await asked_of(ctx, thread)  # the runtime's own waits: in no checkpoint
    body["interrupts"] = body["interrupts"] + [wait_interrupt(w) for w in asked]
    return body


@router.post("/threads/{thread_id}/state/checkpoint")
async def state_at_checkpoint(
    request: Request, thread_id: ThreadId, body: Annotated[StateAtCheckpoint, Body()]
) -> dict[str, Any]:
    ctx = ctx_of(request)
    thread = await ctx.threads.get(thread_id)
    ref = body.checkpoint.model_dump(exclude={"thread_id"}, exclude_none=True)
    return state_json(await ctx.threads.state(thread, ref, body.subgraphs), thread_id)


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def state_at(
    request: Request,
    thread_id: ThreadId,
    checkpoint_id: Annotated[str, Path(max_length=200)],
    subgraphs: bool = Query(default=False),
) -> dict[str, Any]:
    ctx = ctx_of(request)
    thread = await ctx.threads.get(thread_id)
    ref = {"checkpoint_id": checkpoint_id}
    return state_json(await ctx.threads.state(thread, ref, subgraphs), thread_id)


@router.post("/threads/{thread_id}/state")
async def update_state(
    request: Request, thread_id: ThreadId, body: Annotated[StatePost, Body()]
) -> dict[str, Any]:
    """``update_state``, as a node (``as_node``, ``__copy__`` included) or from a given
    checkpoint. Refused while a run of the thread is queued, running or cancelling: its
    steps and this update would interleave in one lineage (a waiting run holds no
    worker, so its thread may be updated)."""
    ctx = ctx_of(request)
    thread = await ctx.threads.get(thread_id, "update")
    if lg_thread_status(thread) == "busy" and thread.run_status != RunStatus.WAITING:
        raise Conflict(f"Thread {thread_id} has an active run; wait for it or cancel it")
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    ref = body.checkpoint.model_dump(exclude_none=True) if body.checkpoint else {}
    if body.checkpoint_id:
        ref["checkpoint_id"] = body.checkpoint_id
    configurable.update({k: v for k, v in ref.items() if k != "thread_id"})
    async with ctx.threads.graph(thread, "threads.update") as graph:
        try:
            stored = await graph.aupdate_state(
                {"configurable": configurable}, body.values, body.as_node
            )
        except (ValueError, KeyError, TypeError, InvalidUpdateError) as exc:  # a bad update
            raise UnprocessableRequest(f"{type(exc).__name__}: {exc}") from None
    conf = stored["configurable"]
    await ctx.store.lg_set_thread_metadata(thread_id, {})
    return {
        "checkpoint": {
            "thread_id": thread_id,
            "checkpoint_ns": conf.get("checkpoint_ns", ""),
            "checkpoint_id": conf.get("checkpoint_id"),
        },
        "configurable": to_jsonable(conf),
        "checkpoint_id": conf.get("checkpoint_id"),
    }


async def history(ctx: AppContext, thread: Thread, query: HistoryQuery) -> list[dict[str, Any]]:
    """The thread's checkpoints, newest first, as LangGraph's states (the history
    routes, and the thread protocol's ``state.listCheckpoints``)."""
    checkpoint = query.checkpoint.model_dump(exclude_none=True) if query.checkpoint else None
    states = await ctx.threads.history(
        thread,
        limit=query.limit,
        before=query.before_id,
        checkpoint=checkpoint,
        metadata=query.metadata,
    )
    return [state_json(s, thread.thread_id) for s in states]


@router.post("/threads/{thread_id}/history")
async def post_history(
    request: Request, thread_id: ThreadId, body: Annotated[HistoryQuery | None, Body()] = None
) -> list[dict[str, Any]]:
    ctx = ctx_of(request)
    return await history(ctx, await ctx.threads.get(thread_id), body or HistoryQuery())


@router.get("/threads/{thread_id}/history")
async def get_history(
    request: Request,
    thread_id: ThreadId,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    before: Annotated[str | None, Query(max_length=200, pattern=NO_NUL)] = None,
) -> list[dict[str, Any]]:
    ctx = ctx_of(request)
    query = HistoryQuery(limit=limit, before=before)
    return await history(ctx, await ctx.threads.get(thread_id), query)


__all__ = ["history", "router", "view"]
