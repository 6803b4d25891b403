"""The actions an app's ``auth.py`` leaves to no ``@auth.on`` handler: listed at start (as
LangGraph's server lists them since 0.10), allowed by default as there, and refused
with ``OUTLAST_AUTH_DEFAULT=deny`` when a client asks for one, on the LangGraph face,
``/v1`` and MCP. A lookup outlast makes for its own sake is no client's action: deny
does not refuse it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import Auth

from outlast.service.authz import ACTIONS, coverage_warning, uncovered
from outlast.store import Store
from tests.harness import is_problem, make_settings, serve
from tests.mcp_client import connect
from tests.user_auth_support import ALICE, manifest

TOKENS = {"token-alice": "alice", "token-bob": "bob"}
EVERY = sorted(ACTIONS)


def authenticated() -> Auth:
    auth = Auth()

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        _, _, token = (authorization or "").partition(" ")
        if token not in TOKENS:
            raise Auth.exceptions.HTTPException(status_code=401, detail="invalid token")
        return TOKENS[token]

    return auth


async def allow(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


# The apps' auth.py objects, named by langgraph.json as "tests.test_auth_coverage:<name>".
THREADS_CREATE = authenticated()
THREADS_CREATE.on.threads.create(allow)
RUNS_ONLY = authenticated()
RUNS_ONLY.on.threads.create_run(allow)


def sdk_actions() -> list[tuple[str, str]]:
    """What langgraph_sdk's ``Auth.on`` registers handlers for, found by walking its
    namespaces as LangGraph's server does at start."""
    on, found = Auth().on, []
    for name in type(on).__slots__:
        namespace = getattr(on, name, None)
        if name.startswith("_") or name == "value" or namespace is None:
            continue
        for attr in dir(namespace):
            action = getattr(getattr(namespace, attr), "action", None)
            if not attr.startswith("_") and isinstance(action, str):
                found.append((getattr(getattr(namespace, attr), "resource", name), action))
    return sorted(found)


def app_settings(tmp_path: Path, auth: str, default: str = "allow") -> Any:
    target = f"tests.test_auth_coverage:{auth}"
    return make_settings(graphs_file=manifest(tmp_path, target), auth_default=default)


# -- which actions a handler covers ------------------------------------------------------


def test_the_actions_are_the_ones_the_sdk_registers_handlers_for() -> None:
    assert sorted(ACTIONS) == sdk_actions()
    assert len(ACTIONS) == 21


def test_an_auth_without_on_handlers_covers_nothing() -> None:
    assert uncovered(authenticated()) == EVERY
    said = coverage_warning(authenticated(), deny=False)
    assert said is not None and "21 of 21" in said


def test_a_global_handler_covers_everything() -> None:
    auth = authenticated()
    auth.on(allow)
    assert uncovered(auth) == []
    assert coverage_warning(auth, deny=False) is None
    assert coverage_warning(auth, deny=True) is None


def test_a_resource_handler_covers_its_actions_and_no_others() -> None:
    threads, store = authenticated(), authenticated()
    threads.on.threads(allow)
    store.on.store(allow)
    assert uncovered(threads) == [p for p in EVERY if p[0] != "threads"]
    assert uncovered(store) == [p for p in EVERY if p[0] != "store"]
    assert ("threads", "create_run") not in uncovered(threads)


def test_an_action_handler_covers_that_action_alone() -> None:
    assert uncovered(THREADS_CREATE) == [p for p in EVERY if p != ("threads", "create")]
    assert ("threads", "create_run") in uncovered(THREADS_CREATE)
    listed = authenticated()
    listed.on.store(actions=["put", "get"])(allow)
    assert ("store", "put") not in uncovered(listed) and ("store", "search") in uncovered(listed)


def test_an_action_on_any_resource_covers_it_where_it_exists() -> None:
    reads = authenticated()
    reads.on(resources="*", actions="read")(allow)
    covered = set(EVERY) - set(uncovered(reads))
    assert covered == {("assistants", "read"), ("threads", "read"), ("crons", "read")}
    # the resource's own handler outranks it, and both count as covering
    reads.on.threads.search(allow)
    assert ("threads", "search") not in uncovered(reads)


def test_the_warning_names_each_gap_and_what_happens_to_it() -> None:
    allowed = coverage_warning(THREADS_CREATE, deny=False)
    denied = coverage_warning(THREADS_CREATE, deny=True)
    assert allowed is not None and denied is not None
    for said in (allowed, denied):
        assert "20 of 21" in said
        assert listed_in(said) == [f"{r}.{a}" for r, a in uncovered(THREADS_CREATE)]
    assert "allowed" in allowed and "OUTLAST_AUTH_DEFAULT=deny" in allowed
    assert "refuses them (403)" in denied


def listed_in(said: str) -> list[str]:
    return said.split("actions: ", 1)[1].split(". ", 1)[0].split(", ")


# -- at start ---------------------------------------------------------------------------


@pytest.mark.parametrize(("default", "fate"), [("allow", "allowed"), ("deny", "refuses them")])
async def test_the_server_lists_the_uncovered_actions_once_at_start(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture, default: str, fate: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="outlast"):
        async with serve(store, app_settings(tmp_path, "THREADS_CREATE", default)) as srv:
            assert (await srv.client.get("/ok")).status_code == 200
    said = [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("outlast") and "@auth.on" in r.getMessage()
    ]
    assert len(said) == 1, said
    assert "threads.create" not in listed_in(said[0])
    assert {"threads.search", "threads.create_run", "store.put"} <= set(listed_in(said[0]))
    assert fate in said[0]


# -- OUTLAST_AUTH_DEFAULT ---------------------------------------------------------------


@pytest.mark.parametrize("default", ["allow", "deny"])
async def test_deny_refuses_on_the_langgraph_face_what_no_handler_covers(
    store: Store, tmp_path: Path, default: str
) -> None:
    settings = app_settings(tmp_path, "THREADS_CREATE", default)
    async with serve(store, settings, with_worker=False) as srv:
        made = await srv.client.post("/threads", json={}, headers=ALICE)
        assert made.status_code == 200, made.text  # threads.create has its handler
        searched = await srv.client.post("/threads/search", json={}, headers=ALICE)
        if default == "allow":  # LangGraph's behaviour: allowed, unfiltered
            assert searched.status_code == 200, searched.text
            assert [t["thread_id"] for t in searched.json()] == [made.json()["thread_id"]]
            return
        assert searched.status_code == 403, searched.text
        detail = searched.json()["detail"]
        assert "threads.search" in detail and "OUTLAST_AUTH_DEFAULT=deny" in detail


@pytest.mark.parametrize("default", ["allow", "deny"])
async def test_deny_refuses_on_v1_a_read_of_ones_own_run(
    store: Store, tmp_path: Path, default: str
) -> None:
    settings = app_settings(tmp_path, "RUNS_ONLY", default)
    async with serve(store, settings, with_worker=False) as srv:
        body = {"graph": "whoami", "input": {"topic": "?"}}
        made = await srv.client.post("/v1/runs", json=body, headers=ALICE)
        assert made.status_code == 202, made.text  # threads.create_run has its handler
        read = await srv.client.get(f"/v1/runs/{made.json()['id']}", headers=ALICE)
        if default == "allow":
            assert read.status_code == 200, read.text
            return
        detail = is_problem(read, 403)["detail"]
        assert "threads.read" in detail and "OUTLAST_AUTH_DEFAULT=deny" in detail


async def test_deny_refuses_no_lookup_outlast_makes_for_itself(
    store: Store, tmp_path: Path
) -> None:
    """A run on a thread reads the thread's latest run for its graph: no client read,
    so only ``threads.create_run`` decides. MCP's tool list leaves out the assistants
    ``assistants.search`` does not cover, and keeps the graphs."""
    settings = app_settings(tmp_path, "RUNS_ONLY", "deny")
    async with serve(store, settings, with_worker=False) as srv:
        body = {"graph": "whoami", "input": {"topic": "?"}}
        first = await srv.client.post("/v1/runs", json=body, headers=ALICE)
        assert first.status_code == 202, first.text
        again = await srv.client.post(
            f"/v1/threads/{first.json()['thread_id']}/runs",
            json={"input": {"topic": "!"}, "if_busy": "enqueue"},
            headers=ALICE,
        )
        assert again.status_code == 202, again.text
        assert again.json()["graph"] == "whoami"  # the latest run's, looked up for the client
        async with connect(srv.url, "token-alice") as alice:
            tools = {t.name for t in (await alice.session.list_tools()).tools}
        assert {"hitl", "whoami"} <= tools
