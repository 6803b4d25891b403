"""What the HTTP faces share at their edge: who is calling (the request's context, bound to
its principal), the headers a request is checked against, and how a run is looked up; for
``/v1`` also as FastAPI dependencies (``Ctx``, ``RunOf``, ``IdempotencyKey``,
``ListCursorParam``), so a route states what it needs in its signature and the OpenAPI
document lists it. What a request must pass before it changes a run (sizes, limits,
threads) is the run service's (``outlast.service``), the same for every face.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from typing import Annotated

from fastapi import Depends, Header, Path, Query, Request
from starlette.requests import HTTPConnection

from outlast.api.context import AppContext
from outlast.errors import InvalidCursor, OutlastError
from outlast.service.authz import NOBODY
from outlast.store import ListCursor, Run

KEY_PATTERN = re.compile(r"^[\x21-\x7e]{1,255}$")
# A thread's id in a path, on every face (a UUID or a client's own name).
ThreadId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")]


class BadHeader(OutlastError):
    status = 400
    title = "Invalid header"


def ctx_of(request: HTTPConnection) -> AppContext:
    """The app's context, seen by this request's principal (and, with the app's
    ``auth.py``, its user's handlers)."""
    ctx: AppContext = request.app.state.ctx
    return dataclasses.replace(
        ctx,
        principal=getattr(request.state, "principal", ""),
        authz=getattr(request.state, "authz", NOBODY),
        http=ctx.http.bound(request.headers),
    )


def checked_key(key: str | None) -> str | None:
    if key is not None and not KEY_PATTERN.match(key):
        raise BadHeader("Idempotency-Key must be 1–255 visible ASCII characters")
    return key


# -- as FastAPI dependencies: what a route declares it needs -----------------------------


# The dependencies are coroutines, though none awaits: FastAPI runs a plain function
# dependency in a worker thread, a thread hop per request for nothing.
async def _request_ctx(request: Request) -> AppContext:
    return ctx_of(request)


Ctx = Annotated[AppContext, Depends(_request_ctx)]

RUN_ID = Path(
    description="a run's id (a UUID; anything else is no run)",
    json_schema_extra={"format": "uuid"},
)


async def _run_of(ctx: Ctx, run_id: Annotated[str, RUN_ID]) -> Run:
    return await ctx.runs.get(run_id)


# The run named by the path, seen by this request's principal (404 otherwise).
RunOf = Annotated[Run, Depends(_run_of)]


async def _idempotency_key(
    idempotency_key: Annotated[
        str | None,
        # Declared, not enforced by FastAPI: a malformed key stays a 400 (BadHeader).
        Header(json_schema_extra={"pattern": KEY_PATTERN.pattern}),
    ] = None,
) -> str | None:
    return checked_key(idempotency_key)


IdempotencyKey = Annotated[str | None, Depends(_idempotency_key)]


def _encode_cursor(pos: int) -> str:
    return base64.urlsafe_b64encode(f"p{pos}".encode()).decode().rstrip("=")


def list_cursor(run: Run) -> str:
    """The opaque cursor of the page that starts after ``run``."""
    return _encode_cursor(run.pos)


async def _decode_cursor(
    cursor: Annotated[
        str | None,
        Query(max_length=100, description="a next_cursor this server returned"),
    ] = None,
) -> ListCursor | None:
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        pos = text[1:]
        # Bounded, so a forged cursor is refused here, not by the database (integer overflow).
        if not (text.startswith("p") and pos.isascii() and pos.isdigit() and len(pos) < 19):
            raise ValueError(text)
        return ListCursor(int(pos))
    except ValueError:
        raise InvalidCursor("cursor is not one this server returned") from None


ListCursorParam = Annotated[ListCursor | None, Depends(_decode_cursor)]
