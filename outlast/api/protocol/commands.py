"""The thread protocol's commands: ``POST /threads/{thread_id}/commands``, and the
WebSocket's inbound frames through ``dispatch``.

A command is ``{"id": n, "method": "...", "params": {...}}``; its answer is
``{"type": "success", "id": n, "result": {...}, "meta": {"applied_through_seq": head}}``
or ``{"type": "error", "id": n | null, "error": <ErrorCode>, "message": "..."}``. The
head is the thread stream's cursor read before the command acts
(``cursor.thread_head``): what the command causes comes after it.

A client's mistake never raises: it is an error envelope. Over HTTP, as LangGraph's own
server answers: a message that is not a command (no integer ``id``, no string
``method``, ``params`` that are not an object, a body that is not JSON, a malformed
``Idempotency-Key``) is a ``400``;
every command, refused or not, a ``200`` with its envelope (both SDKs read either). Only
what a retry may cure keeps its status, ``429`` at a limit and ``503`` with the database
away, with ``Retry-After``; nothing was done then. An unexpected failure is a ``200``
``unknown_error``, not a ``500``: a client that retries every 5xx must not start a run
twice on a failure that may have come after the run was made.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from outlast.api.context import AppContext
from outlast.api.edge import ThreadId, checked_key, ctx_of
from outlast.api.protocol.cursor import thread_head
from outlast.api.protocol.methods import METHODS, Call, Handler, Refused
from outlast.api.protocol.params import explain
from outlast.errors import OutlastError, RunNotFound, ThreadNotFound, WaitNotFound, WaitNotOpen

log = logging.getLogger(__name__)
router = APIRouter(tags=["langgraph"])

MAX_ID = 2**53 - 1  # a command id is a JavaScript safe integer (js-uint)
_THREAD_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")  # as the LangGraph face's paths
# The socket's own: a subscription over HTTP is the stream request itself.
WEBSOCKET_ONLY = frozenset(
    {"subscription.subscribe", "subscription.unsubscribe", "subscription.reconnect"}
)


@dataclass(frozen=True, slots=True)
class Answer:
    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def error(command_id: int | None, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "id": command_id, "error": code, "message": message}


def _command_id(message: Any) -> int | None:
    cid = message.get("id") if isinstance(message, dict) else None
    ok = isinstance(cid, int) and not isinstance(cid, bool) and 0 <= cid <= MAX_ID
    return cid if ok else None


async def dispatch(ctx: AppContext, thread_id: str, message: Any) -> dict[str, Any]:
    """Answer one command on ``thread_id`` (the WebSocket's frames): its response
    envelope, success or error; never raises for a client's mistake."""
    return (await answer(ctx, thread_id, message)).body


async def answer(ctx: AppContext, thread_id: str, message: Any, key: str | None = None) -> Answer:
    """``dispatch`` with the HTTP status the envelope goes out with. ``key``: the
    request's ``Idempotency-Key``, for the commands that make a run (``run.start``,
    ``input.respond``, ``state.fork``): a retry with it gets the first answer's run."""
    cid = _command_id(message)
    method = message.get("method") if isinstance(message, dict) else None
    if cid is None or not isinstance(method, str):
        text = "a command is an object with an integer id (0 to 2**53 - 1) and a string method"
        return Answer(error(cid, "invalid_argument", text), 400)
    if not _THREAD_ID.match(thread_id):
        return Answer(error(cid, "invalid_argument", f"{thread_id!r} is not a thread id"), 400)
    try:
        key = checked_key(key)
    except OutlastError as exc:
        return Answer(error(cid, "invalid_argument", str(exc)), 400)
    handler = METHODS.get(method)
    if handler is None:
        if method in WEBSOCKET_ONLY:
            text = (
                f"{method} is a WebSocket command; over HTTP a subscription is a request "
                f"to POST /threads/{thread_id}/stream/events with its filter"
            )
            return Answer(error(cid, "not_supported", text))
        return Answer(error(cid, "unknown_command", f"unknown command {method!r}"))
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return Answer(error(cid, "invalid_argument", "params: must be an object"), 400)
    return await _run(ctx, thread_id, cid, handler, params, key)


async def _run(
    ctx: AppContext,
    thread_id: str,
    cid: int,
    handler: Handler,
    params: dict[str, Any],
    key: str | None,
) -> Answer:
    try:
        thread = await ctx.runs.owners.thread(thread_id)
        # Before the command acts; another principal's thread is none of the caller's.
        head = await thread_head(ctx.store, thread_id) if thread is not None else 0
        result = await handler(Call(ctx, thread_id, thread, params, key))
    except Exception as exc:  # every refusal becomes an envelope
        return _refusal(cid, exc)
    meta = {"applied_through_seq": head}
    return Answer({"type": "success", "id": cid, "result": result, "meta": meta})


def _refusal(cid: int, exc: Exception) -> Answer:
    if isinstance(exc, ValidationError):
        return Answer(error(cid, "invalid_argument", explain(exc)))
    if isinstance(exc, Refused):
        return Answer(error(cid, exc.code, exc.message))
    if isinstance(exc, OutlastError):
        if exc.retryable:  # a limit, the database away: nothing was done; try again later
            retry_after = str(getattr(exc, "retry_after", 1))
            body = error(cid, "unknown_error", str(exc))
            return Answer(body, exc.status, {"Retry-After": retry_after})
        return Answer(error(cid, _code_of(exc), str(exc)))
    log.exception("protocol command failed")
    return Answer(error(cid, "unknown_error", f"internal error ({type(exc).__name__})"))


def _code_of(exc: OutlastError) -> str:
    if isinstance(exc, RunNotFound | ThreadNotFound):
        return "no_such_run"
    if isinstance(exc, WaitNotFound | WaitNotOpen):
        return "no_such_interrupt"
    return "invalid_argument" if exc.status < 500 else "unknown_error"


_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["id", "method"],
                "properties": {
                    "id": {"type": "integer", "minimum": 0, "maximum": MAX_ID},
                    "method": {"type": "string"},
                    "params": {"type": "object"},
                },
            }
        }
    },
}


@router.post(
    "/threads/{thread_id}/commands",
    openapi_extra={"requestBody": _BODY},
    responses={400: {"description": "not a command (no integer id or string method)"}},
)
async def commands(request: Request, thread_id: ThreadId) -> JSONResponse:
    """One command of LangGraph's thread protocol (agent-protocol ``streaming/``):
    ``run.start``, ``input.respond``, ``input.inject``, ``state.get``,
    ``state.listCheckpoints``, ``state.fork``, ``agent.getTree``; the answer is the
    command's response envelope."""
    ctx = ctx_of(request)
    try:
        message = json.loads(await request.body())
    except ValueError:
        return _response(Answer(error(None, "invalid_argument", "the body is not JSON"), 400))
    found = await answer(ctx, thread_id, message, request.headers.get("idempotency-key"))
    return _response(found)


def _response(found: Answer) -> JSONResponse:
    body = found.body
    if found.status >= 400:  # what every error of the LangGraph face carries (its SDKs)
        body = {**body, "detail": body["message"]}
    return JSONResponse(body, found.status, headers=found.headers or None)
