"""A real server on a real socket, in the test's event loop, and a small SSE client.

Stream tests must cut real TCP connections, so the API runs under uvicorn on an
ephemeral port; httpx talks to it over loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from outlast.api.app import create_app
from outlast.config import Settings
from outlast.graph.registry import GraphRegistry
from outlast.store import Store

TESTS = Path(__file__).parent
GRAPHS = TESTS / "langgraph.json"


def make_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "graphs_file": GRAPHS,
        "worker_heartbeat": 0.5,
        "worker_lease_ttl": 5.0,
        "reaper_interval": 0.5,
        "queue_poll": 5.0,
        "shutdown_grace": 2.0,
        "stream_keepalive": 15.0,
    }
    base.update(overrides)
    return Settings(**base)


@dataclass
class Server:
    url: str
    store: Store
    settings: Settings
    client: httpx.AsyncClient
    app: Any = None


@contextlib.asynccontextmanager
async def serve(
    store: Store, settings: Settings | None = None, *, with_worker: bool = True
) -> AsyncIterator[Server]:
    settings = settings or make_settings()
    app = create_app(
        settings,
        store=_Unclosable(store),  # type: ignore[arg-type]
        registry=GraphRegistry.from_config(settings.graphs_file),
        with_worker=with_worker,
        migrate=False,
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        try:
            yield Server(url, store, settings, client, app)
        finally:
            server.should_exit = True
            await task


class _Unclosable:
    """The fixture owns the store; the app's lifespan must not close it."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None


@dataclass
class SSE:
    id: str | None
    event: str
    data: Any


async def sse_events(response: httpx.Response) -> AsyncIterator[SSE]:
    """Parse a text/event-stream (comments are skipped)."""
    event_id: str | None = None
    event = "message"
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield SSE(event_id, event, json.loads("\n".join(data)))
            event_id, event, data = None, "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            event_id = value
        elif field == "event":
            event = value
        elif field == "data":
            data.append(value)


async def collect(
    client: httpx.AsyncClient,
    run_id: str,
    *,
    after: int | None = None,
    last_event_id: str | None = None,
) -> list[SSE]:
    """Read a run's stream to its end."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    params = {"after": str(after)} if after is not None else {}
    out: list[SSE] = []
    async with client.stream(
        "GET", f"/v1/runs/{run_id}/events", headers=headers, params=params
    ) as response:
        assert response.status_code == 200, await response.aread()
        async for item in sse_events(response):
            out.append(item)
    return out


async def post_run(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    response = await client.post("/v1/runs", json=body)
    assert response.status_code == 202, response.text
    result: dict[str, Any] = response.json()
    return result


async def wait_result(
    client: httpx.AsyncClient, run_id: str, timeout: float = 30
) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}/result", params={"wait": timeout})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result
