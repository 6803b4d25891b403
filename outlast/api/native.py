"""What the ``/v1`` routes share: a run as its clients see it, the headers of an accepted
run, and a request as the runtime takes it."""

from __future__ import annotations

from fastapi import Response

from outlast.api.context import AppContext
from outlast.api.schemas import RunCreate, RunSnapshot, as_dict
from outlast.runtime.accept import RunRequest
from outlast.store import Run
from outlast.vocabulary import RunStatus, WaitStatus


def location(run_id: str) -> dict[str, str]:
    path = f"/v1/runs/{run_id}"
    return {"Location": path, "Content-Location": path}


async def snapshot(ctx: AppContext, run: Run) -> RunSnapshot:
    """The run as clients see it; a waiting run says what it waits for."""
    waiting = run.status == RunStatus.WAITING
    waits = await ctx.store.list_waits(run.id, WaitStatus.OPEN) if waiting else []
    return RunSnapshot.of(run, waits)


def run_request(body: RunCreate, graph: str | None, thread_id: str | None) -> RunRequest:
    """A ``/v1`` request in the run service's terms (which resolves budget and model)."""
    return RunRequest(
        graph=graph,
        input=body.input,
        thread_id=thread_id,
        config=as_dict(body.config),
        metadata=body.metadata,
        budget=as_dict(body.budget),
    )


def accepted(response: Response, run: Run, created: bool) -> None:
    """The headers of a 202: where the run lives, when to look, whether it was a replay."""
    response.headers.update(location(run.id))
    response.headers["Retry-After"] = "1"
    if not created:
        response.headers["Idempotent-Replayed"] = "true"
