"""``/info`` and ``/ok``: what the server is, and whether it is up."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from outlast import __version__
from outlast.api import problems
from outlast.api.edge import ctx_of
from outlast.errors import StoreUnavailable

router = APIRouter(tags=["langgraph"])

# The protocol version the LangGraph face follows (langgraph-api 0.16.7): Studio is
# reported to gate features on it.
PROTOCOL_VERSION = "0.16.7"


@router.get("/info")
async def info() -> dict[str, Any]:
    """The flags LangGraph's clients read, and what outlast adds: ``strict_resume``
    (a resume that matches no pending interrupt is refused), durable event ids on every
    run (every stream is resumable, across restarts) and ``Idempotency-Key``."""
    return {
        "version": PROTOCOL_VERSION,
        "server": "outlast",
        "outlast_version": __version__,
        "flags": {
            "assistants": True,
            "crons": True,
            "langsmith": False,
            "strict_resume": True,
            "resumable_streams": True,
            "idempotency_key": True,
        },
    }


@router.get("/ok")
async def ok(request: Request, check_db: int = Query(default=0, ge=0, le=1)) -> JSONResponse:
    if check_db:
        try:
            await ctx_of(request).store.ping()
        except StoreUnavailable as exc:
            return problems.error(request, 503, f"database unavailable: {exc}", retryable=True)
    return JSONResponse({"ok": True})
