"""The helpers test modules share; test modules import helpers from here, never from
each other.

Which module holds what:

- ``tests/harness.py`` (this one): the test databases (a Postgres store on the session's
  database, an SQLite store in a folder), waiting on a condition (``eventually``, the one polling
  loop of the suite), the API in the test's own event loop under uvicorn on a real socket
  (stream tests must cut real TCP connections), SSE read with the client's parser, the
  HTTP helpers every API test uses (post a run, wait for its status, answer a wait), the
  API keys of two principals and the problem+json check, and ``/metrics`` scraped.
- ``tests/procs.py``: real ``outlast`` processes (workers and servers) killed with real
  signals, and reading a run's log back from the store after them.
- ``tests/util.py``: a ``NewRun`` (and its LangGraph run) built by hand, for tests that
  drive the store directly.
- ``tests/lg_util.py``: the LangGraph face's SDK client following a slow run, and waiting
  for a run's status through it; the protocol v2 thread stream read raw.
- ``tests/browser.py``: headless Chromium pages and the TCP proxy that cuts connections.
- ``tests/receiver.py``: a real HTTP receiver of webhooks.
- ``tests/mcp_client.py``: the ``mcp`` SDK's client session on the MCP face, and the
  task requests its session has no method for.
- ``tests/store_contract/support.py``: what the store contract's modules share.
- ``tests/graphs.py``, ``tests/lg_graphs.py``, ``tests/compensation_graphs.py``,
  ``tests/credential_graphs.py``: the graphs the tests run.
- ``tests/schemathesis_hooks.py``: the OpenAPI fuzzing's hooks (``tests/test_openapi.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
import uvicorn
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from prometheus_client.parser import text_string_to_metric_families

from outlast.api.app import create_app
from outlast.client.sse import frames
from outlast.config import Settings
from outlast.graph.registry import GraphRegistry
from outlast.store import Store
from outlast.store.options import StoreOptions
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore
from outlast.vocabulary import TERMINAL

TESTS = Path(__file__).parent
GRAPHS = TESTS / "langgraph.json"

T = TypeVar("T")

# How long a condition may take to hold. Generous on purpose: the suite runs six workers
# on two shared cores, where a step that takes 10 ms alone can take seconds. A deadline
# only bounds how long a broken test hangs; it is never what the test checks.
PATIENCE = 60.0

# Activity leases short enough that the supervisor is woken within a test (the defaults
# are sized for real work), and a low renewal cap so its ladder climbs quickly.
SUPERVISOR_FAST = {
    "activity_lease_ttl": 0.4,
    "activity_flush_interval": 0.05,
    "supervisor_renewal_cap": 2,
}


class NotYet(Exception):
    """Raised by a probe of ``eventually`` to say "not yet" with a reason, which the
    timeout's message then shows."""


async def eventually(
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = PATIENCE,
    every: float = 0.02,
    what: str = "the condition",
) -> T:
    """Call ``probe`` (a function or a coroutine function) until it returns something
    truthy, and return that.

    The probe says "not yet" by returning a falsy value or raising ``NotYet``; any other
    exception (an ``AssertionError`` that says the condition can no longer hold, say)
    ends the wait at once. The deadline is on the monotonic clock, not a count of polls,
    so a slow probe cannot stretch it.
    """
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = probe()
            if inspect.isawaitable(result):
                result = await result
        except NotYet as exc:
            last = exc
        else:
            if result:
                return result  # type: ignore[return-value]
            last = result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not hold within {timeout:g} s; last: {last!r}")
        await asyncio.sleep(every)


def eventually_blocking(
    probe: Callable[[], T],
    *,
    timeout: float = PATIENCE,
    every: float = 0.02,
    what: str = "the condition",
) -> T:
    """``eventually`` for the tests that have no event loop (they drive processes from
    threads): the same contract, sleeping the thread between polls."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            result = probe()
        except NotYet as exc:
            last = exc
        else:
            if result:
                return result
            last = result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not hold within {timeout:g} s; last: {last!r}")
        time.sleep(every)


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
    _sdks: list[LangGraphClient] = field(default_factory=list)

    def sdk(self, **options: Any) -> LangGraphClient:
        """LangGraph's SDK client on this server, closed with it (an SDK client left open
        leaks its pooled sockets, which ``filterwarnings = error`` turns into a failure of
        whichever test the garbage collector runs under)."""
        client = get_client(url=self.url, **options)
        self._sdks.append(client)
        return client

    async def close_sdks(self) -> None:
        for client in self._sdks:
            await client.aclose()


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

    def started() -> bool:
        if task.done():
            task.result()  # it failed to start: its error, not a timeout
        return bool(server.started)

    await eventually(started, every=0.01, what="uvicorn starting")
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        srv = Server(url, store, settings, client, app)
        try:
            yield srv
        finally:
            await srv.close_sdks()
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
    """A text/event-stream's events, their data as JSON (read by the client's parser)."""
    async for frame in frames(response.aiter_lines()):
        if frame.data is not None:
            yield SSE(frame.id, frame.event, json.loads(frame.data))


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
    client: httpx.AsyncClient, run_id: str, timeout: float = 2 * PATIENCE
) -> dict[str, Any]:
    """The run's final snapshot. Long-polls in rounds shorter than the client's own
    timeout, so a run that takes longer on a busy machine is waited for, not failed."""

    async def probe() -> dict[str, Any]:
        wait = min(20.0, timeout)
        response = await client.get(f"/v1/runs/{run_id}/result", params={"wait": wait})
        if response.status_code == 202:
            raise NotYet(response.json())
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    return await eventually(probe, timeout=timeout, every=0, what=f"run {run_id} ending")


async def snapshot(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def until_snapshot(
    client: httpx.AsyncClient,
    run_id: str,
    check: Callable[[dict[str, Any]], bool],
    *,
    timeout: float = PATIENCE,
    what: str = "the condition",
) -> dict[str, Any]:
    """The run's snapshot, once ``check`` holds for it."""

    async def probe() -> dict[str, Any]:
        snap = await snapshot(client, run_id)
        if not check(snap):
            raise NotYet(snap)
        return snap

    return await eventually(probe, timeout=timeout, what=f"run {run_id}: {what}")


async def wait_status(
    client: httpx.AsyncClient, run_id: str, status: str, timeout: float = PATIENCE
) -> dict[str, Any]:
    """Poll the snapshot until the run reaches ``status`` (a wait has no terminal event).
    A run that ends in another status fails at once: it will never get there."""

    def check(snap: dict[str, Any]) -> bool:
        if snap["status"] == status:
            return True
        assert snap["status"] not in TERMINAL, f"run ended {snap['status']}, not {status}: {snap}"
        return False

    return await until_snapshot(client, run_id, check, timeout=timeout, what=f"status {status}")


async def answer(srv: Server, run_id: str, wait_id: str, value: Any) -> httpx.Response:
    return await srv.client.post(
        f"/v1/runs/{run_id}/input", json={"wait_id": wait_id, "value": value}
    )


# -- databases ----------------------------------------------------------------------------

# The Postgres server the tests use; each test session creates its own database there
# (``pg_url`` in conftest.py), so parallel sessions never share one.
ADMIN_URL = os.environ.get(
    "OUTLAST_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("OUTLAST_REQUIRE_POSTGRES") == "1"


def with_db(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def create_database(prefix: str) -> str:
    """A new, empty database on the test server, and its URL; the test fails (with
    ``OUTLAST_REQUIRE_POSTGRES=1``, as in CI) or skips when the server is unreachable."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        if REQUIRE_PG:
            pytest.fail(f"OUTLAST_REQUIRE_POSTGRES=1 but Postgres is unreachable: {exc}")
        pytest.skip(f"Postgres unreachable at {ADMIN_URL}: {exc}")
    return with_db(ADMIN_URL, name)


_MIGRATED: set[str] = set()

TABLES = (
    "outlast_delivery_attempts, outlast_deliveries, outlast_webhooks,"
    " outlast_events, outlast_waits, outlast_signals, outlast_effects, outlast_lg_runs,"
    " outlast_runs, outlast_crons, outlast_threads, outlast_assistant_versions,"
    " outlast_assistants, outlast_sweeps,"
    " checkpoints, checkpoint_blobs, checkpoint_writes,"
    # LangGraph's item store (store/items.py) and its vectors; store_migrations stays.
    " store, store_item_vectors"
)


async def open_pg(
    url: str, *, truncate: bool = True, options: StoreOptions | None = None
) -> PostgresStore:
    """A store on the session's database, migrated once per session and emptied for the
    test (``truncate=False`` to read back what a process of this test wrote)."""
    store = PostgresStore(url, max_size=20, options=options)
    await store.open()
    if url not in _MIGRATED:
        await store.migrate()
        _MIGRATED.add(url)
    if truncate:
        async with store.pool.connection() as conn:
            await conn.execute(f"TRUNCATE {TABLES}")
    return store


async def open_sqlite(folder: Path, *, options: StoreOptions | None = None) -> SqliteStore:
    store = SqliteStore(folder / "outlast.db", folder / "checkpoints.db", options=options)
    await store.open()
    await store.migrate()
    return store


# -- principals and problems (the API with keys) ---------------------------------------------

ALICE = "alice-key-0123456789"
BOB = "bob-key-9876543210xx"
KEYS = f"alice:{ALICE},bob:{BOB}"  # api_keys: two principals


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def is_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    """The body of a problem+json answer with ``status``."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    return body


# -- metrics ------------------------------------------------------------------------------

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(client: httpx.AsyncClient) -> Samples:
    """``GET /metrics``, each sample by name and labels."""
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over the series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)
