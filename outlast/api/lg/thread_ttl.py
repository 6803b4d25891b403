"""A thread's TTL on the LangGraph face: ``include=ttl`` on a thread read, and
``POST /threads/prune``, which does now what a TTL's strategy does when it passes.

Prune is all or nothing when it refuses: a named thread with a run queued, running,
cancelling or waiting answers 409 and nothing is pruned (a run must not lose the
checkpoints it runs on, as a TTL never takes them). Threads the caller cannot see (not
theirs, unknown, or left out by the app's ``threads.delete`` handler) are skipped and not
counted, as LangGraph's ``pruned_count`` counts the threads pruned. What a prune does is
the thread service's (``ThreadService.prune``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Request

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.lg.schemas import ThreadPrune

router = APIRouter(tags=["langgraph"])


async def ttl_json(ctx: AppContext, thread_id: str) -> dict[str, Any] | None:
    """``{"strategy", "ttl_minutes", "expires_at"}`` as LangGraph's server shows it; null
    for a thread without a TTL. ``expires_at`` counts from the last update (the
    thread's or a run's); a thread with an active run outlives it (see retention)."""
    expiry = await ctx.store.lg_thread_expiry(thread_id)
    if expiry is None:
        return None
    return {
        "strategy": expiry.strategy,
        "ttl_minutes": expiry.ttl_minutes,
        "expires_at": expiry.expires_at.isoformat(),
    }


@router.post("/threads/prune")
async def prune_threads(request: Request, body: Annotated[ThreadPrune, Body()]) -> Any:
    """``{"pruned_count": n}``: ``delete`` as ``DELETE /threads/{id}`` for each,
    ``keep_latest`` keeps each thread with its latest checkpoint per namespace."""
    pruned = await ctx_of(request).threads.prune(body.thread_ids, body.strategy)
    return {"pruned_count": len(pruned)}
