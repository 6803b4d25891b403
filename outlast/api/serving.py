"""``langgraph.json``'s ``http`` section: what is served, under which path, and in which
layers, read once when the app is made.

From the outside in, a request goes through: the mount prefix (``mount_prefix``: the
LangGraph face and the app's own routes under it, outlast's own ``/v1``, health checks,
console and documentation where they always are), CORS (``cors``, else outlast's
default), the body limit, then the app's middleware and authentication in
``middleware_order`` (``middleware_first``, the default: the app's middleware sees
every request, refused ones too), then either the app's routes (public unless
``enable_custom_route_auth``) or outlast's. ``disable_*`` takes a group of routes away
(404), as LangGraph's server does; ``disable_webhooks`` keeps runs from sending their
``webhook``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from fastapi.routing import RouteContext
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from outlast import logs
from outlast.api.lg import EXPOSED
from outlast.api.problems import langgraph_face
from outlast.api.run_headers import RunHttp
from outlast.api.user_app import UserApp, flat
from outlast.graph.manifest import CorsSection, HttpSection, Manifest

log = logging.getLogger(__name__)

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]
Wrap = Callable[[ASGIApp], ASGIApp]

# The route groups ``disable_*`` removes: the paths each covers (LangGraph's groups;
# ``ui`` has no routes on outlast). ``meta``: the server's description.
GROUPS: dict[str, tuple[str, ...]] = {
    "assistants": ("/assistants",),
    "threads": ("/threads",),
    "runs": ("/runs",),
    "store": ("/store",),
    "a2a": ("/a2a",),
    "mcp": ("/mcp",),
    "ui": ("/ui",),
    "meta": ("/openapi.json", "/docs", "/redoc", "/info", "/metrics"),
}


def _under(path: str, prefixes: Sequence[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


@dataclass(frozen=True, slots=True)
class Serving:
    section: HttpSection = field(default_factory=HttpSection)
    user: UserApp | None = None

    @classmethod
    def of(cls, manifest: Manifest) -> Serving:
        """The section, its ``app`` imported (``ManifestError`` naming ``http.app``)."""
        return cls(manifest.http or HttpSection(), UserApp.load(manifest))

    @property
    def runs(self) -> RunHttp:
        return RunHttp.of(self.section.configurable_headers, not self.section.disable_webhooks)

    def disabled(self) -> tuple[str, ...]:
        return tuple(
            p
            for name, paths in GROUPS.items()
            if getattr(self.section, f"disable_{name}", False)
            for p in paths
        )

    def ours(self, routes: Sequence[BaseRoute]) -> tuple[RouteContext, ...]:
        """Outlast's routes as served: each one, less the disabled groups'."""
        gone = self.disabled()
        return tuple(r for r in flat(routes) if not _under(r.path or "", gone))

    def report(self, app: FastAPI) -> None:
        """The app's routes that hide outlast's: a warning at start-up, naming both."""
        if self.user is not None:
            for shadow in self.user.shadows(self.ours(app.router.routes)):
                log.warning("langgraph.json http.app %s: %s", self.user.target, shadow)

    def lifespan(self, ours: Lifespan) -> Lifespan:
        """Outlast's lifespan, with the app's inside it: the store and the worker are up
        when the app's starts, and still up while it stops. State the app's lifespan
        yields is the requests' ``request.state``, as under Starlette."""
        user = self.user
        if user is None:
            return ours

        @asynccontextmanager
        async def both(app: FastAPI) -> AsyncIterator[Mapping[str, Any] | None]:
            async with ours(app), user.lifespan() as state:
                yield state

        return both

    def around(self, routes: ASGIApp, table: Sequence[BaseRoute], authenticate: Wrap) -> ASGIApp:
        """Outlast's routes (``routes``, their FastAPI stack; ``table``, the routes) less
        the disabled groups, the app's routes beside them, authentication and the app's
        middleware in ``middleware_order``."""
        gone = self.disabled()
        routes = _Disabled(routes, gone) if gone else routes
        user = self.user
        if user is None:
            return authenticate(routes)
        ours = self.ours(table)
        mine = user.serve_routes()
        dispatch = _Dispatch(user, ours, mine, routes)

        def guard(inner: ASGIApp) -> ASGIApp:
            authed = authenticate(inner)
            if self.section.enable_custom_route_auth:
                return authed
            return _Dispatch(user, ours, inner, authed)  # the app's routes are public

        if self.section.middleware_order == "auth_first":
            return guard(user.wrap(dispatch))
        return user.wrap(guard(dispatch))

    def outside(
        self, inner: ASGIApp, origins: Sequence[str], table: Sequence[BaseRoute]
    ) -> ASGIApp:
        """CORS (outside authentication: a browser's preflight carries no key), then the
        mount prefix outermost."""
        app = _cors(inner, origins, self.section.cors)
        if self.section.logging_headers is not None:
            app = _LoggedHeaders(app, RunHttp.of(self.section.logging_headers))
        prefix = self.section.mount_prefix
        return _Prefixed(app, prefix, self.user, self.ours(table)) if prefix else app


class _LoggedHeaders:
    """``logging_headers``: the request's headers it picks (by the same patterns as
    ``configurable_headers``, credentials never) on every log record of the request."""

    def __init__(self, app: ASGIApp, picker: RunHttp) -> None:
        self.app, self.picker = app, picker

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw: dict[str, str] = {}
        for name, value in scope["headers"]:
            raw.setdefault(name.decode("latin-1"), value.decode("latin-1"))
        token = logs.HEADERS.set(self.picker.bound(raw).configurable or None)
        try:
            await self.app(scope, receive, send)
        finally:
            logs.HEADERS.reset(token)


class _Disabled:
    """The disabled groups' paths answer 404, as if their routes were not there."""

    def __init__(self, app: ASGIApp, gone: Sequence[str]) -> None:
        self.app, self.gone = app, gone

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and _under(scope["path"], self.gone):
            await _not_found(scope, receive, send)
        else:
            await self.app(scope, receive, send)


class _Dispatch:
    """The app's routes for what they take, ``other`` for the rest."""

    def __init__(self, user: UserApp, ours: Sequence[RouteContext], mine: ASGIApp, other: ASGIApp):
        self.user, self.ours, self.mine, self.other = user, ours, mine, other

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.user.takes(scope, self.ours):
            await self.mine(scope, receive, send)
        else:
            await self.other(scope, receive, send)


def _cors(app: ASGIApp, origins: Sequence[str], cors: CorsSection | None) -> ASGIApp:
    """``http.cors`` in place of outlast's default (``OUTLAST_CORS_ORIGINS``, any method
    and header), key by key; what outlast's clients read (``Location``,
    ``Content-Location``, the pagination headers) stays exposed."""
    c = cors or CorsSection()
    return CORSMiddleware(
        app,
        allow_origins=c.allow_origins if c.allow_origins is not None else origins,
        allow_methods=c.allow_methods if c.allow_methods is not None else ["*"],
        allow_headers=c.allow_headers if c.allow_headers is not None else ["*"],
        allow_credentials=bool(c.allow_credentials),
        allow_origin_regex=c.allow_origin_regex,
        expose_headers=sorted({*EXPOSED, *(h.lower() for h in c.expose_headers or ())}),
        max_age=c.max_age if c.max_age is not None else 600,
        allow_private_network=True,
    )


class _Prefixed:
    """``mount_prefix``: the LangGraph face and the app's routes answer under the prefix
    only (the request goes on without it); outlast's own routes only without it."""

    def __init__(
        self, app: ASGIApp, prefix: str, user: UserApp | None, ours: Sequence[RouteContext]
    ) -> None:
        self.app, self.prefix, self.user, self.ours = app, prefix, user, ours

    def _deployment(self, scope: Scope) -> bool:
        """A path of the deployment (the LangGraph face, the app's routes)."""
        return langgraph_face(scope["path"]) or (
            self.user is not None and self.user.takes(scope, self.ours)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if _under(path, (self.prefix,)):
            scope = {**scope, "path": path[len(self.prefix) :] or "/"}
            if self._deployment(scope):
                await self.app(scope, receive, send)
                return
        elif not self._deployment(scope):
            await self.app(scope, receive, send)
            return
        await _not_found(scope, receive, send)


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 4404})
        return
    await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
