"""An error nobody handled is one 500, and the connection it came on stays usable (issue
43, bug 3): the error is answered (a JSON ``detail`` naming the request id, the id also
in ``request_id`` and ``X-Request-Id``), logged once with its traceback under that id,
and never raised on to uvicorn, which would close a keep-alive connection the client may
already have sent its next request on (the SDK user then saw an unrelated later call fail
with ``ReadError``).

Driven through real paths under uvicorn on a real socket, with ONE ``httpx`` client
whose single pooled connection every request must reuse (its local port never
changes): an app's ``@auth.on`` handler that raises (the LangGraph face and ``/v1``), and
a route of the app's own ``http.app`` that raises (its own framework answers it)."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Awaitable, Iterator
from pathlib import Path

import httpx
import pytest

from outlast.store import Store
from tests.harness import TESTS, make_settings, serve

AUTH = """
from langgraph_sdk import Auth

auth = Auth()

@auth.authenticate
async def authenticate(authorization: str | None):
    return {"identity": "alice"}

@auth.on.threads.create
async def thread_create_breaks(ctx, value):
    raise RuntimeError("the thread handler broke")

@auth.on.threads.create_run
async def run_create_breaks(ctx, value):
    raise RuntimeError("the run handler broke")
"""

WEBAPP = """
from fastapi import FastAPI

app = FastAPI()

@app.get("/custom/broken")
async def broken():
    raise RuntimeError("the app's route broke")
"""

ROUNDS = 15


def _manifest(tmp_path: Path) -> Path:
    (tmp_path / "auth.py").write_text(AUTH)
    (tmp_path / "webapp.py").write_text(WEBAPP)
    path = tmp_path / "langgraph.json"
    graphs = {"hitl": f"{TESTS}/lg_graphs.py:hitl"}
    app = {"auth": {"path": "./auth.py:auth"}, "http": {"app": "./webapp.py:app"}}
    path.write_text(json.dumps({"graphs": graphs, **app}))
    return path


def _local_port(response: httpx.Response) -> int | None:
    """The client's end of the connection ``response`` came on; None once it is closed
    (the client closes its end as soon as it sees the server closed the other)."""
    sock: socket.socket = response.extensions["network_stream"].get_extra_info("socket")
    try:
        port: int = sock.getsockname()[1]
    except OSError:
        return None
    return port


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def logged() -> Iterator[_Records]:
    """What outlast's error layer and uvicorn's error logger say (uvicorn's logger does
    not propagate to the root, so caplog would not see it)."""
    handler = _Records()
    watched = [logging.getLogger("outlast.api.problems"), logging.getLogger("uvicorn.error")]
    for logger in watched:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in watched:
            logger.removeHandler(handler)


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_a_500_leaves_the_keep_alive_connection_usable(
    store: Store, tmp_path: Path, logged: _Records
) -> None:
    settings = make_settings(graphs_file=_manifest(tmp_path))
    async with serve(store, settings) as srv:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=srv.url, timeout=30, limits=limits) as client:
            first = await client.get("/ok")
            assert first.status_code == 200
            port = _local_port(first)
            assert port is not None

            async def same(sent: Awaitable[httpx.Response]) -> httpx.Response:
                response = await sent
                assert _local_port(response) == port, "the connection was closed"
                return response

            seen: set[str] = set()
            for i in range(ROUNDS):
                # the LangGraph face: {"detail": ...} as its SDKs read it
                lg = await same(client.post("/threads", json={}))
                assert lg.status_code == 500, lg.text
                assert lg.headers["content-type"] == "application/json"
                body = lg.json()
                rid = body["request_id"]
                assert lg.headers["x-request-id"] == rid
                assert rid in body["detail"] and "RuntimeError" in body["detail"]
                assert "broke" not in body["detail"]  # the exception's text stays in the log
                seen.add(rid)
                # /v1: a problem document, with the client's own request id kept
                mine = f"client-{i}"
                v1 = await same(
                    client.post(
                        "/v1/runs",
                        json={"graph": "hitl", "input": {}},
                        headers={"X-Request-Id": mine},
                    )
                )
                assert v1.status_code == 500, v1.text
                assert v1.headers["content-type"] == "application/problem+json"
                problem = v1.json()
                assert problem["status"] == 500 and problem["retryable"] is True
                assert problem["request_id"] == mine == v1.headers["x-request-id"]
                assert mine in problem["detail"]
                # the app's own route: its framework answers; the connection stays
                custom = await same(client.get("/custom/broken"))
                assert custom.status_code == 500
                # and the next, ordinary request on the same connection succeeds
                ok = await same(client.get("/ok"))
                assert ok.status_code == 200, ok.text
            assert len(seen) == ROUNDS  # a new id for each request that brought none
    errors = [r for r in logged.records if r.levelno >= logging.ERROR]
    # logged once each, by outlast, with the traceback; uvicorn saw no exception
    assert all(r.name == "outlast.api.problems" for r in errors), [r.getMessage() for r in errors]
    assert len(errors) == 3 * ROUNDS
    assert all(r.exc_info is not None for r in errors)
    said = [r.getMessage() for r in errors]
    assert all(rid in " ".join(said) for rid in seen)
    assert sum("request client-" in m for m in said) == ROUNDS
