"""Answers and signals: ``POST /v1/runs/{id}/input`` and ``POST /v1/signals/{key}``.

The run service checks, seals and stores an answer (``outlast.service``); of any number
of concurrent answers exactly one resumes the run and the others get ``409``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from outlast.api.document import declared
from outlast.api.edge import RUN_ID, Ctx, IdempotencyKey
from outlast.api.native import location, snapshot
from outlast.api.schemas import InputRequest, RunSnapshot, SignalRequest, SignalResult

router = APIRouter(prefix="/v1", tags=["waits"])


@router.post(
    "/runs/{run_id}/input",
    status_code=202,
    response_model=RunSnapshot,
    responses=declared(404, 409, 413, 422),
)
async def answer_wait(
    ctx: Ctx,
    response: Response,
    run_id: Annotated[str, RUN_ID],
    body: InputRequest,
    idempotency_key: IdempotencyKey,
) -> RunSnapshot:
    """Answer a human, auth, budget or reconciliation wait; the run resumes with it.
    ``409`` if the wait is no longer open (a second answer never resumes twice), ``422``
    if the value does not match the wait's schema. With ``Idempotency-Key``, a retry of an
    answer that was already taken is recognised (``202``, ``Idempotent-Replayed: true``)."""
    handle = await ctx.runs.handle(run_id, "answer")
    run, fresh = await handle.answer(
        body.value, source="input", key=idempotency_key, wait_id=body.wait_id
    )
    response.headers.update(location(run.id))
    if not fresh:
        response.headers["Idempotent-Replayed"] = "true"
    return await snapshot(ctx, run)


@router.post("/signals/{key}", response_model=SignalResult, responses=declared(413))
async def send_signal(
    ctx: Ctx,
    key: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-/]{1,200}$")],
    body: SignalRequest | None = None,
) -> SignalResult:
    """Wake every run waiting on event ``key``. The signal is kept for the lookback window
    (``OUTLAST_SIGNAL_LOOKBACK``), so a wait registered just after it still wakes."""
    runs = await ctx.runs.signal(key, body.payload if body else None)
    return SignalResult(key=key, woken=len(runs), runs=runs)
