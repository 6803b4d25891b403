"""Authentication by the app's own ``auth.py`` (``langgraph.json``'s ``auth.path``), in
place of outlast's API keys.

The ``@auth.authenticate`` handler runs on every request but the public ones
(``api/auth.py``'s ``PUBLIC``: health, the console, the OpenAPI document, ``/info``,
``/ok``, an agent card), whatever the face, and on every WebSocket upgrade. It is given
what it names, as LangGraph's server gives it: ``request``, ``body`` (the parsed JSON
body, or None), ``path``, ``method``, ``path_params`` (the route's), ``query_params``,
``headers`` (``bytes`` → ``bytes``, names lowercased) and ``authorization`` (the header's
value). The user it returns becomes ``scope["state"]["principal"]`` (its identity: every
principal-scoped record is the user's) and ``scope["state"]["authz"]``, which every
route's context carries to the ``@auth.on`` handlers (``service/authz.py``).

An ``Auth.exceptions.HTTPException`` becomes its status and detail, shaped for the face
(``{"detail": …}`` on the LangGraph face, problem details elsewhere); a ``ValueError``
(the tutorial's ``scheme, token = authorization.split()`` on ``Bearer`` alone) is a
``400`` with its message, as on LangGraph's server; any other exception (an
``AssertionError`` too, unlike in an ``@auth.on`` handler) is a ``500``, as there. A
refused upgrade is closed before it is accepted (code ``4000 + status``). LangGraph's
server answers an ``HTTPException`` of another status than 401 or 403 with a 500; outlast
answers with the status the handler chose. The rate limit is the identity's, as it is
the key's principal's with keys.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from langgraph_sdk.auth import Auth
from langgraph_sdk.auth.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from outlast.api.auth import PUBLIC, RateLimiter
from outlast.api.problems import langgraph_face, send_problem
from outlast.service.authz import Authz, User, user_of

log = logging.getLogger(__name__)

Routes = Callable[[], list[Any]]


class UserAuthenticate:
    """Runs the app's authenticate handler; sets the principal and the ``Authz``."""

    def __init__(
        self,
        app: ASGIApp,
        auth: Auth,
        limiter: RateLimiter,
        routes: Routes,
        *,
        deny_uncovered: bool = False,
    ) -> None:
        self.app = app
        self.auth = auth
        self.deny_uncovered = deny_uncovered  # OUTLAST_AUTH_DEFAULT=deny
        self.limiter = limiter
        self.routes = routes  # the app's routes, for path_params
        handler = auth._authenticate_handler
        self.wants = set(inspect.signature(handler).parameters) if handler else set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if scope["type"] == "http" and PUBLIC.match(scope["path"]):
            state["principal"] = ""
            await self.app(scope, receive, send)
            return
        raw: bytes | None = None
        if "body" in self.wants and scope["type"] == "http":
            receive, raw = await _buffered(receive)
        try:
            user = await self._user(scope, receive, raw)
        except HTTPException as exc:
            await _refuse(scope, send, exc.status_code, str(exc.detail), exc.headers)
            return
        except ValueError as exc:
            # LangGraph's server answers 400 with the message: the tutorial's
            # `scheme, token = authorization.split()` on a header of one word
            log.info("the app's authenticate handler refused a request: %r", exc)
            await _refuse(scope, send, 400, str(exc) or type(exc).__name__, None)
            return
        except Exception:
            log.exception("the app's authenticate handler failed")
            await _refuse(scope, send, 500, "the authentication handler failed", None)
            return
        wait = self.limiter.wait_needed(user.identity)
        if wait > 0:
            await _refuse(
                scope,
                send,
                429,
                f"more than {self.limiter.rate:g} requests per second (OUTLAST_RATE_LIMIT)",
                {"Retry-After": str(max(1, math.ceil(wait)))},
            )
            return
        state["principal"] = user.identity
        state["authz"] = Authz(self.auth, user, shared=True, deny_uncovered=self.deny_uncovered)
        await self.app(scope, receive, send)

    async def _user(self, scope: Scope, receive: Receive, raw: bytes | None) -> User:
        handler = self.auth._authenticate_handler
        if handler is None:  # an Auth with only @auth.on handlers: nobody in particular
            return User({"identity": "", "is_authenticated": False})
        given = self._arguments(scope, receive, raw)
        found: Any = handler(**{k: v for k, v in given.items() if k in self.wants})
        if inspect.isawaitable(found):
            found = await found
        return user_of(found)

    def _arguments(self, scope: Scope, receive: Receive, raw: bytes | None) -> dict[str, Any]:
        headers = {k.lower(): v for k, v in scope["headers"]}
        authorization = headers.get(b"authorization")
        query = scope.get("query_string", b"").decode("latin-1")
        out: dict[str, Any] = {
            "path": scope["path"],
            "method": scope.get("method", "GET"),
            "headers": headers,
            "authorization": authorization.decode("latin-1") if authorization else None,
            "query_params": dict(parse_qsl(query, keep_blank_values=True)),
        }
        if "path_params" in self.wants:
            out["path_params"] = self._path_params(scope)
        if "request" in self.wants:
            out["request"] = Request(scope, receive) if scope["type"] == "http" else None
        if "body" in self.wants:
            out["body"] = _json(raw)
        return out

    def _path_params(self, scope: Scope) -> dict[str, str]:
        for route in self.routes():
            match, child = route.matches(scope)
            if match == Match.FULL:
                return {k: str(v) for k, v in child.get("path_params", {}).items()}
        return {}


async def _buffered(receive: Receive) -> tuple[Receive, bytes]:
    """The whole body, and a ``receive`` that gives it again to the route (the handler
    asked for ``body``)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    raw = b"".join(chunks)
    replay: list[Message] = [{"type": "http.request", "body": raw, "more_body": False}]

    async def again() -> Message:
        return replay.pop() if replay else await receive()

    return again, raw


def _json(raw: bytes | None) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


async def _refuse(scope: Scope, send: Send, status: int, detail: str, headers: Any) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4000 + status if status < 1000 else 4000})
        return
    extra = {str(k): str(v) for k, v in dict(headers or {}).items()}
    if langgraph_face(scope["path"]):
        raw = json.dumps({"detail": detail}).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(raw))]
        head += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": raw})
        return
    await send_problem(
        send, status, detail, title="Unauthorized" if status == 401 else None, headers=extra or None
    )
