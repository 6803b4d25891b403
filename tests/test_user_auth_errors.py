"""An app's ``auth.py`` as LangGraph's tutorials write it, and what its handlers raise,
answered as LangGraph's server answers (compared by hand with ``langgraph dev``,
langgraph-api 0.16.7, the same ``auth.py``):

- the tutorials' ``@auth.on`` handler, ``value.setdefault("metadata", {}).update(filters)``,
  on a search or a count: LangGraph gives it a ``metadata`` dict (``{}`` when the query has
  none); outlast gave ``None`` to ``assistants.search`` (LangGraph Studio's first call), and
  the handler's ``None.update`` was a 500;
- an ``assert`` in any ``@auth.on`` handler: 403 with its message; a ``ValueError``: 400
  with its message; another exception: 500;
- in ``@auth.authenticate``: a ``ValueError`` (the tutorial's ``scheme, token =
  authorization.split()`` on ``Bearer`` alone) is a 400 with its message; a ``KeyError``
  and an ``AssertionError`` are 500 there (unlike in an ``@auth.on`` handler);
  ``HTTPException(401)`` is its status and detail.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import Auth

from outlast.store import Store
from tests.harness import Server, is_problem, make_settings, serve
from tests.user_auth_support import manifest

YEARLY = "0 0 1 1 *"
ALICE = {"Authorization": "Bearer alice"}
BOB = {"Authorization": "Bearer bob"}
MALLORY = {"Authorization": "Bearer mallory"}  # every handler asserts she may not
VALERIE = {"Authorization": "Bearer valerie"}  # every handler raises ValueError

# What the handlers were given, (resource, action, value) as it came in.
SEEN: list[tuple[str, str, Any]] = []

APP = Auth()


@APP.authenticate
async def authenticate(authorization: str | None, headers: dict[bytes, bytes]) -> str:
    failing = headers.get(b"x-fail", b"").decode()
    if failing == "value":
        raise ValueError("x-tenant: not a tenant of this app")
    if failing == "key":
        raise KeyError("tenant")
    if failing == "assert":
        raise AssertionError("no tenant")
    if failing == "401":
        raise Auth.exceptions.HTTPException(status_code=401, detail="who are you?")
    _scheme, token = (authorization or "").split()  # the tutorial's
    return token


def _refuse_some(ctx: Auth.types.AuthContext) -> None:
    if ctx.user.identity == "mallory":
        # what `assert ctx.user.identity != "mallory", "..."` raises in an app's module
        # (pytest rewrites the assert statements of this one, and their message)
        raise AssertionError(f"mallory may not {ctx.resource}.{ctx.action}")
    if ctx.user.identity == "valerie":
        raise ValueError(f"{ctx.resource}.{ctx.action}: valerie's request is malformed")


@APP.on
async def owner_only(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> dict[str, Any]:
    """LangGraph's "make conversations private" tutorial handler."""
    SEEN.append((ctx.resource, ctx.action, copy.deepcopy(value)))
    _refuse_some(ctx)
    filters = {"owner": ctx.user.identity}
    value.setdefault("metadata", {}).update(filters)
    return filters


@APP.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    SEEN.append((ctx.resource, ctx.action, copy.deepcopy(value)))
    _refuse_some(ctx)
    value["namespace"] = (ctx.user.identity, *(value.get("namespace") or ()))


def _settings(tmp_path: Path) -> Any:
    return make_settings(graphs_file=manifest(tmp_path, "tests.test_user_auth_errors:APP"))


def _seen(resource: str, action: str) -> list[Any]:
    return [value for r, a, value in SEEN if (r, a) == (resource, action)]


async def test_search_and_count_handlers_that_write_metadata_work(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, _settings(tmp_path), with_worker=False) as srv:
        alice, bob = srv.sdk(headers=ALICE), srv.sdk(headers=BOB)
        made = {}
        for user, client in (("alice", alice), ("bob", bob)):
            assistant = await client.assistants.create("hitl", name=f"{user}'s")
            thread = await client.threads.create()
            cron = await client.crons.create("hitl", schedule=YEARLY, input={"topic": "t"})
            made[user] = (assistant["assistant_id"], thread["thread_id"], cron["cron_id"])
        aid, tid, cid = made["alice"]
        SEEN.clear()
        # the handler's stamp narrows every search to the caller's own (the system
        # assistants too: their metadata is {"created_by": "system"})
        assert [a["assistant_id"] for a in await alice.assistants.search()] == [aid]
        assert await alice.assistants.count() == 1
        assert [t["thread_id"] for t in await alice.threads.search()] == [tid]
        assert await alice.threads.count() == 1
        assert [c["cron_id"] for c in await alice.crons.search()] == [cid]
        assert await alice.crons.count() == 1
        await alice.store.put_item(["notes"], "k", {"v": 1})
        assert [i["key"] for i in (await alice.store.search_items(["notes"]))["items"]] == ["k"]
        assert (await alice.store.list_namespaces())["namespaces"] == [["alice", "notes"]]

    # The values, as `langgraph dev` gives them to the same handler for the same calls:
    #   assistants.search {"graph_id": None, "metadata": {}, "limit": 10, "offset": 0}
    #   (a count: "limit": 0, "offset": 0)
    #   crons.search {"assistant_id": None, "thread_id": None, "limit": 10, "offset": 0,
    #                 "metadata": {}}  (a count: "limit": 0, "offset": 0)
    #   store.search {"namespace": ["notes"], "filter": None, "limit": 10, "offset": 0,
    #                 "query": None, "refresh_ttl": None}
    #   store.list_namespaces {"namespace": None, "suffix": None, "max_depth": None,
    #                          "limit": 100, "offset": 0}
    #   threads.search {"metadata": {}, "values": {}, "status": None, "limit": 10,
    #                   "offset": 0}: outlast gives the request's fields that are set (no
    #   "metadata" key when none is asked for, which `setdefault` handles)
    assert _seen("assistants", "search") == [
        {"graph_id": None, "metadata": {}, "limit": 10, "offset": 0},
        {"graph_id": None, "metadata": {}, "limit": 0, "offset": 0},
    ]
    assert _seen("crons", "search") == [
        {"assistant_id": None, "thread_id": None, "limit": 10, "offset": 0, "metadata": {}},
        {"assistant_id": None, "thread_id": None, "limit": 0, "offset": 0, "metadata": {}},
    ]
    searched, listed = _seen("store", "search"), _seen("store", "list_namespaces")
    assert [{**v, "namespace": list(v["namespace"])} for v in searched] == [
        {
            "namespace": ["notes"],
            "filter": None,
            "limit": 10,
            "offset": 0,
            "query": None,
            "refresh_ttl": None,
        }
    ]
    assert listed == [
        {"namespace": None, "suffix": None, "max_depth": None, "limit": 100, "offset": 0}
    ]
    assert all(not v.get("metadata") for v in _seen("threads", "search"))


async def _calls(srv: Server, headers: dict[str, str]) -> dict[str, Any]:
    """One request per resource (and a run on /v1), as ``headers``' user, by the action
    whose handler answers it."""
    c = srv.client
    return {
        "assistants.search": await c.post("/assistants/search", json={}, headers=headers),
        "assistants.create": await c.post(
            "/assistants", json={"graph_id": "hitl"}, headers=headers
        ),
        "threads.create": await c.post("/threads", json={}, headers=headers),
        "threads.search": await c.post("/threads/search", json={}, headers=headers),
        "crons.search": await c.post("/runs/crons/search", json={}, headers=headers),
        "crons.create": await c.post(
            "/runs/crons",
            json={"assistant_id": "hitl", "schedule": YEARLY, "input": {}},
            headers=headers,
        ),
        "store.put": await c.put(
            "/store/items", json={"namespace": ["n"], "key": "k", "value": {}}, headers=headers
        ),
        "store.search": await c.post(
            "/store/items/search", json={"namespace_prefix": ["n"]}, headers=headers
        ),
        "store.list_namespaces": await c.post("/store/namespaces", json={}, headers=headers),
        "/v1 threads.create_run": await c.post(
            "/v1/runs", json={"graph": "hitl", "input": {"topic": "t"}}, headers=headers
        ),
    }


async def test_an_assert_in_any_handler_is_403_and_a_value_error_400_with_the_message(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store, _settings(tmp_path), with_worker=False) as srv:
        refused = await _calls(srv, MALLORY)
        malformed = await _calls(srv, VALERIE)
    for call, response in refused.items():
        action = call.rsplit(" ", 1)[-1]
        if call.startswith("/v1"):
            assert is_problem(response, 403)["detail"] == f"mallory may not {action}"
        else:
            assert response.status_code == 403, (call, response.text)
            assert response.json() == {"detail": f"mallory may not {action}"}, call
    for call, response in malformed.items():
        action = call.rsplit(" ", 1)[-1]
        said = f"{action}: valerie's request is malformed"
        if call.startswith("/v1"):
            assert is_problem(response, 400)["detail"] == said
        else:
            assert response.status_code == 400, (call, response.text)
            assert response.json() == {"detail": said}, call


@pytest.mark.parametrize(
    ("headers", "status", "detail"),
    [
        # the tutorial's `scheme, token = authorization.split()` on "Bearer" alone
        ({"Authorization": "Bearer"}, 400, "not enough values to unpack (expected 2, got 1)"),
        ({**ALICE, "x-fail": "value"}, 400, "x-tenant: not a tenant of this app"),
        ({**ALICE, "x-fail": "401"}, 401, "who are you?"),
        ({**ALICE, "x-fail": "key"}, 500, None),
        ({**ALICE, "x-fail": "assert"}, 500, None),  # a 403 in @auth.on only
    ],
)
async def test_what_authenticate_raises_is_answered_as_langgraph_answers_it(
    store: Store, tmp_path: Path, headers: dict[str, str], status: int, detail: str | None
) -> None:
    async with serve(store, _settings(tmp_path), with_worker=False) as srv:
        face = await srv.client.post("/assistants/search", json={}, headers=headers)
        v1 = await srv.client.get("/v1/runs", headers=headers)
        fine = await srv.client.post("/assistants/search", json={}, headers=ALICE)
    assert face.status_code == status, face.text
    assert is_problem(v1, status)
    if detail is not None:
        assert face.json() == {"detail": detail}
        assert is_problem(v1, status)["detail"] == detail
    assert fine.status_code == 200  # the next request is served as usual
