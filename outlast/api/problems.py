"""Every error the API returns, built in one place for both faces.

On ``/v1`` a client gets RFC 9457 ``application/problem+json`` with a ``title`` and a
``detail`` it can show as written, and ``retryable`` so it knows whether trying again can
help. On the LangGraph face (``api/lg``) the same error has the shape LangGraph's SDKs
read, ``{"detail": "..."}`` with the same status: the SDKs raise typed errors from the
status and show ``detail``.

An exception nothing handled is answered by ``Unhandled``, outside every other layer of
outlast's: one 500, its ``detail`` naming the request id (also its ``request_id`` and
``X-Request-Id``), logged once with the traceback under that id, and not raised on to
the server, so the connection stays usable.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from outlast.errors import OutlastError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"
_TITLES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Unprocessable request",
    429: "Too many requests",
    500: "Internal error",
    501: "Not implemented",
    503: "Service unavailable",
}


def _body(
    status: int, detail: str, title: str | None, retryable: bool, extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "about:blank",
        "title": title or _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "retryable": retryable,
        **extra,
    }


def problem(
    status: int,
    detail: str,
    *,
    title: str | None = None,
    retryable: bool = False,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = _body(status, detail, title, retryable, extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


async def send_problem(
    send: Send,
    status: int,
    detail: str,
    *,
    title: str | None = None,
    retryable: bool = False,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> None:
    """The same problem, sent by an ASGI layer that runs outside FastAPI (authentication,
    the body limit) and so cannot return a response."""
    raw = json.dumps(_body(status, detail, title, retryable, extra)).encode()
    head = [(b"content-type", PROBLEM.encode()), (b"content-length", b"%d" % len(raw))]
    head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


# The LangGraph face's paths (api/lg): its clients expect {"detail": ...} bodies.
LANGGRAPH_PREFIXES = ("/assistants", "/threads", "/runs", "/store", "/info", "/ok")


def langgraph_face(path: str) -> bool:
    return path.startswith(LANGGRAPH_PREFIXES)


def error(
    request: Request,
    status: int,
    detail: str,
    *,
    title: str | None = None,
    retryable: bool = False,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    """The error response for the face the request came through."""
    if langgraph_face(request.url.path):
        return JSONResponse({"detail": detail}, status_code=status, headers=headers)
    return problem(status, detail, title=title, retryable=retryable, headers=headers, **extra)


def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in loc if p != "body") or "body"


def install(app: FastAPI) -> None:
    @app.exception_handler(OutlastError)
    async def outlast_error(request: Request, exc: OutlastError) -> JSONResponse:
        # A limit names itself ("limit") and says when to come back (Retry-After).
        retry_after = getattr(exc, "retry_after", 1)
        headers = {"Retry-After": str(retry_after)} if exc.retryable else None
        limit = getattr(exc, "limit", None)
        extra = {"limit": limit} if limit else {}
        return error(
            request,
            exc.status,
            str(exc),
            title=exc.title,
            retryable=exc.retryable,
            headers=headers,
            **extra,
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"location": _location(e.get("loc", ())), "message": e.get("msg", "")}
            for e in exc.errors()
        ]
        json_invalid = any(e.get("type") == "json_invalid" for e in exc.errors())
        detail = "; ".join(f"{e['location']}: {e['message']}" for e in errors) or "invalid request"
        if json_invalid:
            return error(request, 400, f"request body is not valid JSON ({detail})", errors=errors)
        return error(request, 422, detail, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else _TITLES.get(exc.status_code, "")
        if exc.status_code == 404 and detail == "Not Found":
            detail = "no such resource"
        extra: dict[str, Any] = {}
        if exc.status_code == 413:  # FastAPI's body limit, met while the body streamed in
            extra["limit"] = "max_body_bytes"
        return error(
            request, exc.status_code, detail, headers=dict(exc.headers or {}) or None, **extra
        )

    # No handler for Exception: FastAPI would give it to Starlette's ServerErrorMiddleware,
    # which answers and then raises the error on to the server, by design; uvicorn then
    # closes the connection. ``Unhandled`` (OutlastAPI's outer layer) answers it instead.


REQUEST_ID = "X-Request-Id"
_SENT_ID = re.compile(r"^[\x21-\x7e]{1,128}$")


def request_id(scope: Scope) -> str:
    """The request's id: the client's own ``X-Request-Id`` when it sent a sane one (so
    its logs and the server's meet on it), else a new one."""
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            sent: str = value.decode("latin-1")
            if _SENT_ID.match(sent):
                return sent
            break
    return uuid.uuid4().hex


class Unhandled:
    """An exception that no other layer handled, from any layer inside it: answered with
    one 500 (``internal_error``), logged once with its traceback and the request id, and
    not raised further.

    Starlette's own last layer (``ServerErrorMiddleware``, which ``OutlastAPI`` leaves
    out) answers such an error and then raises it on to the server so that the server
    logs it; uvicorn then closes the connection, which a keep-alive client may already
    have sent its next request on: an unrelated later call failed with ``ReadError``
    (issue 43). Here the server never sees the error, and keeps the connection.

    A response already under way when the error came cannot become a 500: the error goes
    on to the server, which cuts the connection (the client sees a response cut short,
    never a whole wrong one). An error after the response was complete (an app's own
    framework answered it, a background task) is logged, and the connection kept."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def watched(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:
            if started and not finished:
                raise
            rid = request_id(scope)
            method, path = scope.get("method", ""), scope.get("path", "")
            log.error("unhandled error in %s %s (request %s)", method, path, rid, exc_info=exc)
            if not started:
                await internal_error(scope, send, exc, rid)


async def internal_error(scope: Scope, send: Send, exc: Exception, rid: str) -> None:
    """The 500 of an unhandled error, shaped for the face the request came through. The
    exception's type is said, its text is not (it may hold what the client must not
    see): the log has it, under the request id."""
    detail = f"internal error ({type(exc).__name__}); request id {rid} (the server's log has it)"
    headers = {REQUEST_ID: rid}
    if not langgraph_face(scope.get("path", "")):
        await send_problem(send, 500, detail, retryable=True, headers=headers, request_id=rid)
        return
    raw = json.dumps({"detail": detail, "request_id": rid}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
    head.append((REQUEST_ID.lower().encode(), rid.encode()))
    await send({"type": "http.response.start", "status": 500, "headers": head})
    await send({"type": "http.response.body", "body": raw})
