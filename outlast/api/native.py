"""What the ``/v1`` routes share: a run as its clients see it, the headers of an accepted
run, and a request as the runtime takes it."""

from __future__ import annotations

from fastapi import Response

from outlast.api.context import AppContext
from outlast.api.edge import check_size
from outlast.api.schemas import RunCreate, RunSnapshot, as_dict
from outlast.runtime.accept import RunRequest
from outlast.runtime.budget import resolve_budget
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


def run_request(
    ctx: AppContext, body: RunCreate, graph: str | None, thread_id: str | None
) -> RunRequest:
    """The request as the runtime takes it: the budget resolved against the defaults and
    bounded by the operator's caps, and the model (for graphs that call one) resolved
    and checked."""
    check_size(body.input, ctx.settings.max_input_bytes, "input", "max_input_bytes")
    budget = resolve_budget(
        as_dict(body.budget), ctx.settings.budget_defaults, ctx.settings.budget_caps
    )
    config = as_dict(body.config)
    name = graph or (ctx.registry.names[0] if ctx.registry.names else None)
    model = None
    if name in ctx.registry.names:  # an unknown name is refused by new_run
        model = ctx.registry.model_for(name, config)
    return RunRequest(
        graph=graph,
        input=body.input,
        thread_id=thread_id,
        config=config,
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
