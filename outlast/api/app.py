"""The FastAPI app. ``create_app`` opens the store, migrates, loads every graph (so a
broken graph fails at start), and by default runs a worker in the same process, which is
what ``outlast serve`` does on the embedded SQLite default."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import FastAPI
from langgraph_sdk.auth import Auth
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from outlast import __version__, heap, taskdump
from outlast.api import console, document, lg, mcp, problems, protocol
from outlast.api.a2a import routes as a2a_routes
from outlast.api.auth import Authenticate, KeyRing, RateLimiter
from outlast.api.context import AppContext
from outlast.api.health import router as health_router
from outlast.api.lg.cron_runs import firer
from outlast.api.limits import BodyLimitProblems
from outlast.api.metrics_route import router as metrics_router
from outlast.api.runs import router as runs_router
from outlast.api.serving import Serving
from outlast.api.threads import router as threads_router
from outlast.api.userauth import UserAuthenticate
from outlast.api.waits import router as waits_router
from outlast.api.webhooks import BODIES
from outlast.api.webhooks import router as webhooks_router
from outlast.config import Settings
from outlast.graph.manifest import Manifest
from outlast.graph.registry import GraphRegistry
from outlast.runtime.deployment import open_store
from outlast.runtime.loops import LoopFailed
from outlast.runtime.worker import Worker
from outlast.secretbox import SecretBox
from outlast.service import authz
from outlast.store import Store

log = logging.getLogger(__name__)


class OutlastAPI(FastAPI):
    """FastAPI with the body-limit problem layer outside everything else, then the
    principal: a request is sized and authenticated before anything reads it. An error no
    layer handled is answered by ``problems.Unhandled`` around them all (inside CORS, so
    a browser can read the 500), in place of Starlette's ``ServerErrorMiddleware``, which
    raises the error on to the server after answering it, and so loses the connection."""

    keys: KeyRing = KeyRing()
    limiter: RateLimiter = RateLimiter(0)
    box: SecretBox | None = None  # stream tokens (api/stream_tokens.py)
    user_auth: Auth | None = None  # langgraph.json's auth.path: replaces the keys
    auth_deny: bool = False  # OUTLAST_AUTH_DEFAULT=deny: what no handler covers is refused

    cors_origins: tuple[str, ...] = ("*",)
    serving: Serving = Serving()  # langgraph.json's http section (api/serving.py)

    def _routes(self) -> list[BaseRoute]:
        return self.router.routes

    def build_middleware_stack(self) -> ASGIApp:
        def authenticate(app: ASGIApp) -> ASGIApp:
            # the app's auth.py when langgraph.json names one, else outlast's API keys
            if self.user_auth is not None:
                return UserAuthenticate(
                    app, self.user_auth, self.limiter, self._routes, deny_uncovered=self.auth_deny
                )
            return Authenticate(app, self.keys, self.limiter, self.box)

        routes = self.router.routes
        stack = super().build_middleware_stack()
        if isinstance(stack, ServerErrorMiddleware):  # FastAPI's outermost layer
            stack = stack.app
        inner = self.serving.around(stack, routes, authenticate)
        # CORS outside authentication: a browser's preflight carries no key.
        return self.serving.outside(
            problems.Unhandled(lg.PlainTextJSON(BodyLimitProblems(inner, self.max_body_size or 0))),
            self.cors_origins,
            routes,
        )


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    registry: GraphRegistry | None = None,
    with_worker: bool = True,
    migrate: bool = True,
    on_worker_failed: Callable[[BaseException], None] | None = None,
    settle_heap: bool = False,
) -> FastAPI:
    """``on_worker_failed``: called if the embedded worker stops by itself (one of its loops
    kept failing); ``outlast serve`` shuts the server down and exits non-zero on it.
    ``settle_heap``: once started, set the heap aside from the garbage collector
    (``outlast/heap.py``); for a process that serves this app alone."""
    settings = settings or Settings()
    serving = Serving.of(Manifest.read(settings.graphs_file))
    parts = _Parts(
        settings, store, registry, with_worker, migrate, on_worker_failed, settle_heap, serving
    )
    app = OutlastAPI(
        title="outlast",
        version=__version__,
        description="A durable runtime for LangGraph agents: the connection can die; "
        "the agent does not.",
        lifespan=serving.lifespan(parts.lifespan),
        max_body_size=settings.max_body_bytes,
    )
    app.user_auth = user_auth(settings)
    app.auth_deny = settings.auth_default == "deny"
    if app.user_auth is not None:
        # here, not in user_auth(): `outlast serve` imports the Auth once more to check it
        gaps = authz.coverage_warning(app.user_auth, app.auth_deny)
        if gaps is not None:
            log.warning("%s", gaps)
    app.serving = serving
    app.keys = KeyRing.load(settings.api_keys, settings.api_keys_file)
    app.limiter = RateLimiter(settings.rate_limit)
    app.box = SecretBox.from_settings(settings) if app.keys.enabled else None
    app.cors_origins = tuple(settings.cors_origins)
    problems.install(app)
    document.install(app)
    app.include_router(runs_router)
    app.include_router(waits_router)
    app.include_router(webhooks_router)
    a2a_routes.install(app)
    mcp.install(app)
    app.include_router(threads_router)
    app.include_router(metrics_router)
    lg.install(app)
    protocol.install(app)
    console.install(app)
    app.include_router(health_router)
    serving.report(app)
    return app


def user_auth(settings: Settings) -> Auth | None:
    """The app's own ``Auth()`` (``langgraph.json``'s ``auth.path``), imported now: one
    that does not import, or is no ``Auth``, stops the server (``ManifestError``)."""
    manifest = Manifest.read(settings.graphs_file)
    if manifest.auth is None or not manifest.auth.path:
        return None
    manifest.apply_env()  # the handlers' module may read them as it is imported
    return authz.load(manifest.auth.path, manifest.base_dir)


@dataclass(frozen=True, slots=True)
class _Parts:
    """What the app opens when it starts and closes when it stops: the store (migrated),
    the graphs (every one loaded, so a broken graph fails at start), the worker."""

    settings: Settings
    store: Store | None
    registry: GraphRegistry | None
    with_worker: bool
    migrate: bool
    on_worker_failed: Callable[[BaseException], None] | None
    settle_heap: bool
    serving: Serving

    @asynccontextmanager
    async def lifespan(self, app: FastAPI) -> AsyncIterator[None]:
        s = self.store or open_store(self.settings)
        await s.open()
        if self.migrate:
            await s.migrate()
        graphs = self.registry or GraphRegistry.from_config(
            self.settings.graphs_file, self.settings.graphs
        )
        graphs.load_all()
        fire = firer(s, graphs, self.settings)  # the worker's cron scheduler makes runs so
        worker = (
            Worker(s, graphs, self.settings, bodies=BODIES, fire_cron=fire)
            if self.with_worker
            else None
        )
        task = asyncio.create_task(worker.run(), name="outlast-worker") if worker else None
        if task is not None:
            task.add_done_callback(self._worker_ended)
        app.state.ctx = AppContext(s, graphs, self.settings, worker, http=self.serving.runs)
        if self.settle_heap:
            heap.settle()
        taskdump.install()
        try:
            async with mcp.running(app):
                yield
        finally:
            if worker is not None and task is not None:
                worker.stop()
                with contextlib.suppress(asyncio.CancelledError, LoopFailed):
                    await task  # a failure was reported when it happened
            await s.close()

    def _worker_ended(self, done: asyncio.Task[None]) -> None:
        if done.cancelled() or done.exception() is None:
            return  # stopped on shutdown
        exc = done.exception()
        assert exc is not None
        log.critical("the embedded worker stopped: %s", exc)
        if self.on_worker_failed is not None:
            self.on_worker_failed(exc)
