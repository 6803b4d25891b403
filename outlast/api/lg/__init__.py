"""The LangGraph face: LangGraph's Agent Server protocol at the root of the port.

``langgraph_sdk``, ``RemoteGraph``, ``useStream``, Agent Chat UI and Studio speak this
protocol (``../shared/research/langgraph-api-compat.md`` maps it). It is a second
vocabulary over the same store, worker and runs as ``/v1``: a LangGraph run is an outlast
run (or, after a resume, a stretch of one: ``lg_runs``), its stream is a view of the
run's durable log, and an interrupt is an outlast wait. Nothing here executes a graph.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from outlast.api.problems import langgraph_face

# Headers a browser client must be able to read (CORS: api/serving.py): the SDKs
# reconnect through Location, find the run through Content-Location, and page through
# the pagination headers.
EXPOSED = ["location", "content-location", "x-pagination-total", "x-pagination-next"]


class PlainTextJSON:
    """Studio posts JSON as ``text/plain`` (a "simple" request, so the browser skips a
    preflight); LangGraph's server reads it as JSON, and so does this one."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and langgraph_face(scope["path"]):
            headers = scope["headers"]
            for i, (name, value) in enumerate(headers):
                if name == b"content-type" and value.lower().startswith(b"text/plain"):
                    scope = dict(scope)
                    scope["headers"] = [
                        *headers[:i],
                        (b"content-type", b"application/json"),
                        *headers[i + 1 :],
                    ]
                    break
        await self.app(scope, receive, send)


def install(app: FastAPI) -> None:
    from outlast.api.lg import (
        assistant_graphs,
        assistants,
        crons,
        runs,
        store_items,
        system,
        thread_stream,
        thread_ttl,
        threads,
    )

    modules = (
        system,
        store_items,
        assistants,
        assistant_graphs,
        thread_ttl,  # before threads: /threads/prune is no thread id
        threads,
        thread_stream,
        runs,
        crons,
    )
    for module in modules:
        app.include_router(module.router)
