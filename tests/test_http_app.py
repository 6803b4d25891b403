"""``langgraph.json``'s ``http`` section, as LangGraph's server honours it: the app's own
routes, middleware and lifespan beside outlast's; its routes public unless
``enable_custom_route_auth``; ``cors``; request headers into a run's ``configurable``;
``disable_*``; ``mount_prefix`` (with the real ``langgraph_sdk``); a bad ``http.app``
refused at start-up."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from outlast.logs import JsonFormatter
from outlast.store import Store
from tests.harness import ALICE, KEYS, TESTS, auth, make_settings, open_sqlite, serve

WEBAPP = """
import logging
from contextlib import asynccontextmanager
from fastapi import FastAPI, Request

@asynccontextmanager
async def lifespan(app):
    app.state.greeting = "hello from the lifespan"
    yield

app = FastAPI(lifespan=lifespan)

@app.middleware("http")
async def stamp(request: Request, call_next):
    response = await call_next(request)
    response.headers["x-custom"] = "stamped"
    return response

@app.get("/hello")
async def hello(request: Request):
    return {"greeting": request.app.state.greeting,
            "principal": getattr(request.state, "principal", None)}

@app.get("/threads/{thread_id}")
async def mine(thread_id: str):
    return {"mine": thread_id}

@app.get("/noted")
async def noted():
    logging.getLogger("webapp").warning("noted")
    return {}
"""

ECHO = """
from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph

def echo(state: dict, config: RunnableConfig) -> dict:
    return {"seen": {k: v for k, v in config["configurable"].items() if k.startswith("x-")}}

b = StateGraph(dict)
b.add_node("echo", echo)
b.set_entry_point("echo")
graph = b.compile()
"""


def _manifest(tmp_path: Path, http: dict[str, Any]) -> Path:
    (tmp_path / "webapp.py").write_text(WEBAPP)
    (tmp_path / "echo.py").write_text(ECHO)
    graphs = {"steps": "outlast.graph.example:graph", "echo": "./echo.py:graph"}
    graphs["lg_chat"] = f"{TESTS / 'lg_graphs.py'}:chat"
    path = tmp_path / "langgraph.json"
    path.write_text(json.dumps({"graphs": graphs, "http": http}))
    return path


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[Store]:
    (tmp_path / "db").mkdir()
    store = await open_sqlite(tmp_path / "db")
    try:
        yield store
    finally:
        await store.close()


async def test_the_apps_route_middleware_and_lifespan_beside_outlasts(
    sqlite: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    graphs = _manifest(tmp_path, {"app": "./webapp.py:app"})
    with caplog.at_level(logging.WARNING, "outlast.api.serving"):
        async with serve(sqlite, make_settings(graphs_file=graphs)) as srv:
            hello = await srv.client.get("/hello")
            assert hello.json() == {"greeting": "hello from the lifespan", "principal": None}
            assert hello.headers["x-custom"] == "stamped"
            # the middleware wraps outlast's routes too, on both faces
            for path in ("/healthz", "/info", "/v1/runs"):
                got = await srv.client.get(path)
                assert got.status_code == 200 and got.headers["x-custom"] == "stamped", path
            # the app's route is more than a match: it wins, and was reported
            assert (await srv.client.get("/threads/t1")).json() == {"mine": "t1"}
            created = await srv.client.post("/threads", json={})
            assert created.status_code == 200, created.text  # outlast's other routes stay
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "GET /threads/{thread_id} (http.app) hides outlast's GET /threads/{thread_id}" in said
    assert "/hello" not in said  # only what it hides


@pytest.mark.parametrize("order", ["middleware_first", "auth_first"])
@pytest.mark.parametrize("guarded", [False, True])
async def test_custom_routes_are_public_unless_custom_route_auth(
    sqlite: Store, tmp_path: Path, guarded: bool, order: str
) -> None:
    http = {"app": "./webapp.py:app", "enable_custom_route_auth": guarded}
    settings = make_settings(
        graphs_file=_manifest(tmp_path, {**http, "middleware_order": order}), api_keys=KEYS
    )
    async with serve(sqlite, settings) as srv:
        anonymous = await srv.client.get("/hello")
        assert anonymous.status_code == (401 if guarded else 200), anonymous.text
        # middleware_first: the app's middleware sees the refusal too; auth_first: it does not
        stamped = "x-custom" in anonymous.headers
        assert stamped == (not guarded or order == "middleware_first")
        keyed = await srv.client.get("/hello", headers=auth(ALICE))
        assert keyed.status_code == 200
        assert keyed.json()["principal"] == ("alice" if guarded else None)
        assert (await srv.client.get("/info")).status_code == 200  # public as ever
        assert (await srv.client.get("/v1/runs")).status_code == 401  # outlast's stay guarded


async def test_cors_is_the_files(sqlite: Store, tmp_path: Path) -> None:
    cors = {
        "allow_origins": ["https://app.example"],
        "allow_methods": ["GET", "POST"],
        "allow_headers": ["content-type", "x-api-key"],
        "allow_credentials": True,
        "expose_headers": ["x-request-id"],
        "max_age": 60,
    }
    graphs = _manifest(tmp_path, {"cors": cors})
    async with serve(sqlite, make_settings(graphs_file=graphs, api_keys=KEYS)) as srv:
        asked = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-api-key",
        }
        ok = await srv.client.options(
            "/threads", headers={"Origin": "https://app.example", **asked}
        )
        assert ok.status_code == 200, ok.text
        assert ok.headers["access-control-allow-origin"] == "https://app.example"
        assert ok.headers["access-control-allow-credentials"] == "true"
        assert ok.headers["access-control-max-age"] == "60"
        assert set(ok.headers["access-control-allow-methods"].split(", ")) == {"GET", "POST"}
        other = await srv.client.options(
            "/threads", headers={"Origin": "https://evil.example", **asked}
        )
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
        got = await srv.client.get(
            "/info", headers={"Origin": "https://app.example", **auth(ALICE)}
        )
        exposed = got.headers["access-control-expose-headers"].split(", ")
        assert {"x-request-id", "content-location", "location"} <= set(exposed)


async def test_configurable_headers_reach_the_runs_config(store: Store, tmp_path: Path) -> None:
    selection = {
        "includes": ["x-tenant-*", "x-user-id", "x-api-key"],
        "excludes": ["x-tenant-secret"],
    }
    graphs = _manifest(tmp_path, {"configurable_headers": selection})
    async with serve(store, make_settings(graphs_file=graphs)) as srv:
        headers = {
            "x-user-id": "u1",
            "x-tenant-name": "acme",
            "x-tenant-secret": "s3cret",
            "x-other": "no",
        }
        # a credential is never copied, whatever is included (the server has no keys here)
        sdk = srv.sdk(headers=headers, api_key="never-copied-0123456789")
        result = await sdk.runs.wait(None, "echo", input={})
        assert result == {"seen": {"x-user-id": "u1", "x-tenant-name": "acme"}}
        thread = await sdk.threads.create()
        # the body's own configurable wins over a header of the same name
        config = {"configurable": {"x-user-id": "from-body"}}
        result = await sdk.runs.wait(thread["thread_id"], "echo", input={}, config=config)
        assert result == {"seen": {"x-user-id": "from-body", "x-tenant-name": "acme"}}


async def test_without_the_key_no_header_is_copied(sqlite: Store, tmp_path: Path) -> None:
    async with serve(sqlite, make_settings(graphs_file=_manifest(tmp_path, {}))) as srv:
        result = await srv.sdk(headers={"x-user-id": "u1"}).runs.wait(None, "echo", input={})
        assert result == {"seen": {}}


async def test_disabled_groups_answer_404(sqlite: Store, tmp_path: Path) -> None:
    groups = ["assistants", "threads", "runs", "store", "meta", "a2a", "mcp"]
    graphs = _manifest(tmp_path, {f"disable_{g}": True for g in groups})
    async with serve(sqlite, make_settings(graphs_file=graphs)) as srv:
        gone = [
            ("POST", "/assistants/search"),
            ("POST", "/threads"),
            ("GET", "/threads/x/state"),
            ("POST", "/runs/wait"),
            ("POST", "/runs/crons/search"),
            ("PUT", "/store/items"),
            ("GET", "/info"),
            ("GET", "/openapi.json"),
            ("GET", "/docs"),
            ("GET", "/metrics"),
            ("GET", "/a2a/steps/.well-known/agent-card.json"),
            ("POST", "/mcp"),
        ]
        for method, path in gone:
            got = await srv.client.request(method, path, json={})
            assert got.status_code == 404, (path, got.text)
        for path in ("/ok", "/healthz", "/v1/runs"):
            assert (await srv.client.get(path)).status_code == 200, path


async def test_enabled_groups_are_there(sqlite: Store, tmp_path: Path) -> None:
    async with serve(sqlite, make_settings(graphs_file=_manifest(tmp_path, {}))) as srv:
        for path in (
            "/info",
            "/openapi.json",
            "/metrics",
            "/a2a/steps/.well-known/agent-card.json",
        ):
            assert (await srv.client.get(path)).status_code == 200, path


async def test_mount_prefix_with_the_sdk(sqlite: Store, tmp_path: Path) -> None:
    http = {"mount_prefix": "/api", "app": "./webapp.py:app"}
    async with serve(sqlite, make_settings(graphs_file=_manifest(tmp_path, http))) as srv:
        client = get_client(url=f"{srv.url}/api")
        try:
            thread = await client.threads.create()
            parts = [
                p.event
                async for p in client.runs.stream(
                    thread["thread_id"], "steps", input={"topic": "x"}, stream_mode="updates"
                )
            ]
            assert parts[0] == "metadata" and "updates" in parts
            state = await client.threads.get_state(thread["thread_id"])
            assert state["next"] == []
        finally:
            await client.aclose()
        assert (await srv.client.get("/api/hello")).status_code == 200  # the app's too
        for path in ("/info", "/threads/x", "/hello", "/api/v1/runs", "/api/healthz"):
            assert (await srv.client.get(path)).status_code == 404, path
        for path in ("/v1/runs", "/healthz", "/api/info"):
            assert (await srv.client.get(path)).status_code == 200, path


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("./nowhere.py:app", "could not be imported"),
        ("./webapp.py:missing", "no attribute"),
        ("./webapp.py:hello", "not an ASGI app"),
        ("./broken.py:app", "ZeroDivisionError"),
    ],
)
def test_a_bad_http_app_stops_the_server(tmp_path: Path, target: str, says: str) -> None:
    (tmp_path / "broken.py").write_text("app = 1 / 0\n")
    _manifest(tmp_path, {"app": target})
    done = subprocess.run(
        [sys.executable, "-m", "outlast.cli", "serve", "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert "http.app" in said and says in said and "serving on" not in said


async def test_logging_headers_ride_on_the_request_s_log_records(
    sqlite: Store, tmp_path: Path
) -> None:
    graphs = _manifest(
        tmp_path,
        {
            "app": "./webapp.py:app",
            "logging_headers": {
                "includes": ["x-request-*", "authorization"],
                "excludes": ["x-request-secret"],
            },
        },
    )
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    keep = Keep()
    keep.setFormatter(JsonFormatter())
    logging.getLogger("webapp").addHandler(keep)
    try:
        async with serve(sqlite, make_settings(graphs_file=graphs)) as srv:
            sent = {"x-request-id": "r-1", "x-request-secret": "s", "authorization": "Bearer k"}
            assert (await srv.client.get("/noted", headers=sent)).status_code == 200
    finally:
        logging.getLogger("webapp").removeHandler(keep)
    (record,) = [json.loads(r) for r in records]
    # picked by name; excluded ones and credentials never
    assert record["message"] == "noted" and record["headers"] == {"x-request-id": "r-1"}
