"""Answers and signals: ``POST /v1/runs/{id}/input`` and ``POST /v1/signals/{key}``.

An answer is stored first and matched to its wait second; the wait is answered by a
conditional update, so of any number of concurrent answers exactly one resumes the run
and the others get ``409``.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import jsonschema
from fastapi import APIRouter, Path, Response

from outlast.api.document import declared
from outlast.api.edge import RUN_ID, Ctx, IdempotencyKey, check_size, get_run_or_404
from outlast.api.native import location, snapshot
from outlast.api.schemas import InputRequest, RunSnapshot, SignalRequest, SignalResult
from outlast.errors import InvalidAnswer, WaitNotOpen
from outlast.secretbox import SecretBox
from outlast.store import Wait
from outlast.vocabulary import ANSWERABLE_KINDS, WaitKind, WaitStatus

log = logging.getLogger(__name__)
router = APIRouter(prefix="/v1", tags=["waits"])

_HOW: dict[str, str] = {
    WaitKind.TIMER: "it ends at its time",
    WaitKind.EXTERNAL: "it ends when the provider's job is done",
    WaitKind.EVENT: "it ends with POST /v1/signals/{key}",
}


def _validate(schema: dict[str, Any] | None, value: Any, *, secret: bool = False) -> None:
    """``secret``: the value is a credential, so no message quotes it back."""
    if secret and value is None:
        raise InvalidAnswer("value: a credential cannot be null")
    if schema is None:
        return
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "value"
        if secret:
            raise InvalidAnswer(
                f"{where}: not the shape this credential wait asks for ({_shape(schema)}); "
                "the value is not repeated here"
            ) from None
        raise InvalidAnswer(f"{where}: {exc.message}") from None
    except jsonschema.SchemaError as exc:  # the graph declared an invalid schema
        raise InvalidAnswer(f"the wait's schema is invalid: {exc.message}") from None
    except OverflowError:  # a huge integer against a fractional multipleOf
        raise InvalidAnswer("value: number too large to check against the schema") from None
    except Exception as exc:  # a schema that cannot be applied: a circular or unresolvable $ref
        log.warning("a wait's schema cannot be applied: %r", exc)
        raise InvalidAnswer(f"the wait's schema cannot be applied ({type(exc).__name__})") from None


def _shape(schema: dict[str, Any]) -> str:
    if "oneOf" in schema:
        return 'a string, or {"value": ..., "expires_at": "<ISO 8601>"}'
    return f"JSON schema type {schema.get('type', 'any')}"


def validate_answer(wait: Wait, value: Any) -> None:
    _validate(wait.schema, value, secret=wait.kind == WaitKind.AUTH)


def stored(settings: Any, wait: Wait, value: Any) -> Any:
    """An answer as it is stored: an ``auth`` wait's sealed (``secretbox``), since it is
    a credential; any other as given."""
    if wait.kind != WaitKind.AUTH:
        return value
    return SecretBox.from_settings(settings).seal_answer(value)


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
    check_size(body.value, ctx.settings.max_answer_bytes, "the answer", "max_answer_bytes")
    await get_run_or_404(ctx, run_id)
    wait = await ctx.store.get_wait(run_id, body.wait_id)
    if wait.status == WaitStatus.OPEN:
        if wait.kind not in ANSWERABLE_KINDS:
            raise WaitNotOpen(f"a {wait.kind} wait is not answered with input: {_HOW[wait.kind]}")
        validate_answer(wait, body.value)
    value = stored(ctx.settings, wait, body.value)
    _, fresh = await ctx.store.answer(run_id, wait.id, value, "input", idempotency_key)
    response.headers.update(location(run_id))
    if not fresh:
        response.headers["Idempotent-Replayed"] = "true"
    return await snapshot(ctx, await get_run_or_404(ctx, run_id))


@router.post("/signals/{key}", response_model=SignalResult, responses=declared(413))
async def send_signal(
    ctx: Ctx,
    key: Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-/]{1,200}$")],
    body: SignalRequest | None = None,
) -> SignalResult:
    """Wake every run waiting on event ``key``. The signal is kept for the lookback window
    (``OUTLAST_SIGNAL_LOOKBACK``), so a wait registered just after it still wakes."""
    payload = body.payload if body else None
    check_size(payload, ctx.settings.max_answer_bytes, "the payload", "max_answer_bytes")
    runs = await ctx.store.signal(key, payload, ctx.principal)
    return SignalResult(key=key, woken=len(runs), runs=runs)
