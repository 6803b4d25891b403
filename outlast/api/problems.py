"""Every error the API returns, built in one place for both faces.

On ``/v1`` a client gets RFC 9457 ``application/problem+json`` with a ``title`` and a
``detail`` it can show as written, and ``retryable`` so it knows whether trying again can
help. On the LangGraph face (``api/lg``) the same error has the shape LangGraph's SDKs
read, ``{"detail": "..."}`` with the same status: the SDKs raise typed errors from the
status and show ``detail``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Send

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

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return error(request, 500, f"internal error ({type(exc).__name__})", retryable=True)
