"""The differential app's own HTTP routes (``http.app`` in its ``langgraph.json``), as the
custom-routes, middleware and lifespan how-tos write them: a FastAPI app whose lifespan
keeps something in ``app.state``, a middleware that stamps a header on every answer
(LangGraph's routes included), a plain route, one that reads the lifespan's state, one
that needs the caller (custom route auth is on), one that fails."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import Response


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.greeting = "hello from the lifespan"
    app.state.calls = 0
    yield
    app.state.greeting = None


app = FastAPI(lifespan=lifespan)


class CustomHeaderMiddleware(BaseHTTPMiddleware):
    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers["X-Custom-Header"] = "Hello from middleware!"
        return response


app.add_middleware(CustomHeaderMiddleware)


@app.get("/hello")
async def hello() -> dict[str, Any]:
    return {"Hello": "World"}


@app.get("/greeting")
async def greeting(request: Request) -> dict[str, Any]:
    request.app.state.calls += 1
    return {"greeting": request.app.state.greeting}


@app.post("/echo")
async def echo(request: Request) -> dict[str, Any]:
    return {"got": await request.json()}


@app.get("/teapot")
async def teapot() -> dict[str, Any]:
    raise HTTPException(status_code=418, detail="I'm a teapot")
