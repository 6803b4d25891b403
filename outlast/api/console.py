"""The web console: static files at ``/``, and what it reads that the API did not have.

Plain HTML, CSS and JavaScript under ``api/static/``, no build step. The page only uses
the public API (the same calls any client makes); ``/v1/runs/{id}/preserved`` is the one
route added for it: what a crash could not take away from a run (its checkpoints and its
recorded effects).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from outlast.api.document import declared
from outlast.api.edge import Ctx, RunOf
from outlast.vocabulary import EffectStatus

STATIC = Path(__file__).parent / "static"
CHECKPOINTS_COUNTED = 1000

router = APIRouter(tags=["console"])


@router.get("/", include_in_schema=False)
async def console_page() -> FileResponse:
    # Never cached: a deployment upgrade must not leave a stale page talking to a new API.
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


@router.get("/v1/runs/{run_id}/preserved", tags=["runs"], responses=declared(404))
async def preserved(ctx: Ctx, run: RunOf) -> dict[str, Any]:
    """What is already safe: the run's checkpoints (counted up to 1000; ``more`` says
    there are others) with the time of the last one, and its recorded effects."""
    saver = ctx.store.checkpointer()
    config: Any = {"configurable": {"thread_id": run.thread_id, "checkpoint_ns": ""}}
    count, last = 0, None
    async for item in saver.alist(config, filter={"run_id": run.id}, limit=CHECKPOINTS_COUNTED + 1):
        if last is None:
            last = item.checkpoint.get("ts")  # newest first
        count += 1
    effects = await ctx.store.list_effects(run.id)
    done = sum(1 for e in effects if e.status == EffectStatus.DONE)
    return {
        "run_id": run.id,
        "checkpoints": min(count, CHECKPOINTS_COUNTED),
        "more": count > CHECKPOINTS_COUNTED,
        "last_checkpoint_at": _iso(last),
        "effects": len(effects),
        "effects_done": done,
    }


def _iso(value: Any) -> str | None:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return str(value) if value else None


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/console", StaticFiles(directory=STATIC), name="console")
