"""The MCP face (``/mcp``): every graph a tool, every call a durable run (routes.py).

The face is written against the ``mcp`` SDK 2.x (its low-level server's middleware and
request context, ``mcp_types``), an extra: ``pip install 'outlast[mcp]'``. Many apps
bring ``mcp`` 1.x (``langchain-mcp-adapters`` requires ``mcp<2``), and an app that never
asked for ``/mcp`` must still be served: without a usable ``mcp`` the face is left out,
``/mcp`` answers 501 saying how to enable it, and ``outlast serve`` says why once at
start-up (``off``). Only ``routes.py`` and the modules it imports import ``mcp``; this
module imports them only once ``off`` found them usable.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.metadata
import re
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from outlast.api.problems import send_problem

PATH = "/mcp"
NEEDS = (2, 3)  # the first mcp release the face runs on
ENABLE = "pip install 'outlast[mcp]'"


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:2])


@functools.cache
def off() -> str | None:
    """Why the MCP face is not served in this environment (one line, saying how to
    enable it); None when it is served."""
    try:
        version = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return f"mcp is not installed; {ENABLE}"
    if _release(version) < NEEDS:
        return (
            f"mcp {version} is installed and the face needs mcp>=2.3 ({ENABLE}, unless a "
            "package of the app holds mcp below 2, as langchain-mcp-adapters does)"
        )
    try:
        importlib.import_module("outlast.api.mcp.routes")
    except Exception as exc:  # an mcp 2.x the face was not written for: not a dead server
        return f"mcp {version} is not as the face needs ({exc}); {ENABLE}"
    return None


class _Off:
    """``/mcp`` without the face: 501, saying why and how to enable it."""

    def __init__(self, why: str) -> None:
        self.why = why

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send_problem(send, 501, f"the MCP face is off: {self.why}", title="MCP face off")


def install(app: FastAPI) -> None:
    why = off()
    if why is None:
        from outlast.api.mcp import routes

        routes.install(app)
        return
    app.router.routes.append(Route(PATH, _Off(why), methods=["GET", "POST", "DELETE"]))


@contextlib.asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[None]:
    """The MCP sessions of one lifespan of the app, when the face is served."""
    if getattr(app.state, "mcp_face", None) is None:
        yield
        return
    from outlast.api.mcp import routes

    async with routes.running(app):
        yield
