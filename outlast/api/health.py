"""``/healthz`` (the process answers) and ``/readyz`` (it can serve: the database answers
and, with an embedded worker, the worker runs), for load balancers and orchestrators."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from outlast.api import document, problems
from outlast.api.context import AppContext
from outlast.errors import StoreUnavailable

router = APIRouter(tags=["health"])


class Ready(BaseModel):
    status: Literal["ready"]
    backend: str
    graphs: list[str]
    # the graphs that failed to load, with why: served by no one here, the rest are
    graph_errors: dict[str, str] = {}


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz", response_model=Ready, responses=document.declared(503))
async def readyz(request: Request) -> JSONResponse:
    """The database answers (and, with an embedded worker, the worker runs)."""
    ctx: AppContext = request.app.state.ctx
    try:
        await ctx.store.ping()
    except StoreUnavailable as exc:
        return problems.problem(
            503, f"database unavailable: {exc}", retryable=True, headers={"Retry-After": "1"}
        )
    if ctx.worker is not None and (ctx.worker.stopped or ctx.worker.failure is not None):
        reason = ctx.worker.failure or "stopped"
        return problems.problem(503, f"worker not running: {reason}", retryable=False)
    ready = Ready(
        status="ready",
        backend=ctx.store.backend,
        graphs=ctx.registry.names,
        graph_errors=ctx.registry.errors,
    )
    return JSONResponse(ready.model_dump())
