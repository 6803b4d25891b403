"""The deployment's own HTTP app (``langgraph.json`` ``http.app``), served beside
outlast's routes as LangGraph's server serves it.

A Starlette app (FastAPI, FastHTML, …) is taken apart: its routes are served in front of
outlast's (a request one of them matches is the app's: LangGraph's "it can override or
extend the default routes"), its middleware wraps every request, outlast's included, and
its lifespan runs inside outlast's (the store and the worker are up when it starts). Its
exception handlers stay its own, and ``request.app`` is the app itself, so the state its
lifespan sets is what its routes read. Any other ASGI callable is served for what no
outlast route matches (its routes cannot be read, nor its middleware told apart).

A user route that takes requests an outlast route would answer is reported at start-up,
naming both (``shadows``). A FastAPI app's own ``/docs`` and ``/openapi.json`` give way
to outlast's rather than hide them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.routing import RouteContext, iter_route_contexts
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Match, Mount, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from outlast.graph.manifest import Manifest, ManifestError
from outlast.importing import resolve_in

log = logging.getLogger(__name__)

# A value each path convertor accepts, to try a route's path against the other side's.
_SAMPLES = {"int": "1", "float": "1.5", "uuid": "00000000-0000-4000-8000-000000000000"}
_DOC_URLS = ("openapi_url", "docs_url", "redoc_url", "swagger_ui_oauth2_redirect_url")


@dataclass(frozen=True, slots=True)
class UserApp:
    target: str
    app: ASGIApp
    routes: tuple[RouteContext, ...]  # the ones it serves (empty: not a Starlette app)

    @classmethod
    def load(cls, manifest: Manifest) -> UserApp | None:
        """``http.app`` imported (after ``env``); ``ManifestError`` naming ``http.app`` when
        it does not import or is not an ASGI app."""
        target = manifest.http.app if manifest.http else None
        if target is None:
            return None
        manifest.apply_env()  # the app's module may read them, as a graph's does
        try:
            app = resolve_in(target, manifest.base_dir)
        except Exception as exc:  # whatever the user's module raised: named, not a traceback
            raise ManifestError(f"http.app: {target} could not be imported: {exc!r}") from exc
        if not _asgi(app):
            raise ManifestError(
                f"http.app: {target} is {type(app).__name__}, not an ASGI app "
                "(a Starlette or FastAPI app, or async (scope, receive, send))"
            )
        return cls(target, app, _served_routes(app) if isinstance(app, Starlette) else ())

    @property
    def starlette(self) -> Starlette | None:
        return self.app if isinstance(self.app, Starlette) else None

    def takes(self, scope: Scope, ours: Sequence[RouteContext]) -> bool:
        """Whether the request is the app's: one of its routes matches it (a match of the
        path alone, whose method differs, only when no outlast route matches it fully).
        A bare ASGI app takes what no outlast route matches."""
        if scope["type"] not in ("http", "websocket"):
            return False
        if self.starlette is None:
            return _best(ours, scope) is Match.NONE
        best = _best(self.routes, scope)
        if best is Match.PARTIAL:  # the path, not the method: a 405 unless outlast's
            return _best(ours, scope) is not Match.FULL
        return best is Match.FULL

    def serve_routes(self) -> ASGIApp:
        """The app's routes behind its own exception handling, without its middleware
        (which wraps every request elsewhere); ``request.app`` is the app."""
        app = self.starlette
        if app is None:
            return self.app
        middleware, app.user_middleware = app.user_middleware, []
        try:
            stack = app.build_middleware_stack()
        finally:
            app.user_middleware = middleware

        async def routes(scope: Scope, receive: Receive, send: Send) -> None:
            scope["app"] = app
            await stack(scope, receive, send)

        return routes

    def wrap(self, inner: ASGIApp) -> ASGIApp:
        """``inner`` inside the app's middleware, the first added outermost (Starlette's
        order)."""
        app = self.starlette
        if app is None:
            return inner
        for cls, args, kwargs in reversed(app.user_middleware):
            inner = cls(inner, *args, **kwargs)
        return inner

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[Mapping[str, Any] | None]:
        app = self.starlette
        if app is None:
            yield None
            return
        async with app.router.lifespan_context(app) as state:
            yield state

    def shadows(self, ours: Sequence[RouteContext]) -> list[str]:
        """Each outlast route a route of the app hides, as ``METHOD path (http.app) hides
        outlast's METHOD path``: tried both ways, each side's path (its parameters given a
        value they accept) against the other's routes."""
        found: set[str] = set()
        for mine in self.routes:
            for theirs in ours:
                found.update(_overlap(mine, theirs))
        return sorted(found)


def _asgi(app: Any) -> bool:
    if isinstance(app, Starlette):
        return True
    if not callable(app) or isinstance(app, type):
        return False
    call = app if inspect.isfunction(app) or inspect.ismethod(app) else app.__call__
    try:
        params = inspect.signature(call).parameters.values()
    except (TypeError, ValueError):
        return True  # cannot tell: a callable that may take (scope, receive, send)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return varargs or len(positional) == 3


def flat(routes: Sequence[BaseRoute]) -> tuple[RouteContext, ...]:
    """Each route as served, an included router's with its prefix (FastAPI keeps an
    included router as one route)."""
    return tuple(iter_route_contexts(routes))


def _served_routes(app: Starlette) -> tuple[RouteContext, ...]:
    """Its routes, less FastAPI's generated documentation (outlast serves its own)."""
    docs = {getattr(app, name, None) for name in _DOC_URLS} - {None}
    return tuple(r for r in flat(app.routes) if r.path not in docs)


def _best(routes: Sequence[RouteContext], scope: Scope) -> Match:
    best = Match.NONE
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return match
        if match is Match.PARTIAL:
            best = match
    return best


def _sample(route: RouteContext) -> str | None:
    path = route.path_format or route.path
    if not isinstance(path, str):
        return None
    for name, convertor in (getattr(route, "param_convertors", None) or {}).items():
        kind = type(convertor).__name__.removesuffix("Convertor").lower()
        path = path.replace("{" + name + "}", _SAMPLES.get(kind, "x1"))
    return (path + "/x1") if isinstance(route.original_route, Mount) else path


def _requests(route: RouteContext) -> list[Scope]:
    """Requests the route answers (one per method; a websocket's handshake)."""
    path = _sample(route)
    if path is None:
        return []
    if isinstance(route.original_route, WebSocketRoute):
        return [{"type": "websocket", "path": path, "root_path": ""}]
    methods = sorted((route.methods or {"GET"}) - {"HEAD"})
    return [{"type": "http", "path": path, "root_path": "", "method": m} for m in methods]


def _label(route: RouteContext, scope: Scope) -> str:
    if isinstance(route.original_route, Mount):
        return f"{route.path}/… (mounted)"
    path = route.path or "?"
    return f"WEBSOCKET {path}" if scope["type"] == "websocket" else f"{scope['method']} {path}"


def _overlap(mine: RouteContext, theirs: RouteContext) -> set[str]:
    out: set[str] = set()
    for scope in [*_requests(mine), *_requests(theirs)]:
        if mine.matches(scope)[0] is Match.FULL and theirs.matches(scope)[0] is Match.FULL:
            out.add(f"{_label(mine, scope)} (http.app) hides outlast's {_label(theirs, scope)}")
    return out
