"""The assistant service (``service/assistants.py``) on both backends, without HTTP: what
a request to ``/assistants/...`` decides, for principals as tenants (API keys) and under
an app's ``auth.py`` (its ``assistants.*`` handlers, which stamp and filter)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph_sdk import Auth

from outlast.errors import InvalidAssistant, SystemAssistantReadOnly, UnknownGraph
from outlast.graph.registry import GraphRegistry
from outlast.service.assistants import AssistantDraft, AssistantQuery, AssistantService
from outlast.service.authz import Authz, Forbidden, User
from outlast.store import Store
from outlast.store.assistants import AssistantExists, AssistantNotFound
from outlast.store.base import Assistant, system_assistant_id
from tests.user_auth_app import auth

GRAPHS = {"steps": "outlast.graph.example:graph", "booking": "outlast.graph.booking:graph"}


def registry(*, app_auth: bool = False) -> GraphRegistry:
    return GraphRegistry(GRAPHS, app_auth=app_auth)


def named(name: str) -> str:
    """A principal of this test alone (the session's Postgres database keeps what other
    tests made, by principals of the same names)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def service(store: Store, principal: str) -> AssistantService:
    """The service as a principal of outlast's API keys sees it."""
    return AssistantService(store, registry(), principal)


def as_user(store: Store, identity: str) -> AssistantService:
    """The service under ``tests/user_auth_app.py``'s ``auth.py``: every resource
    stamped with its owner and filtered by it, shared across principals."""
    user = User({"identity": identity, "permissions": []})
    return AssistantService(
        store, registry(app_auth=True), identity, Authz(auth, user, shared=True)
    )


async def test_another_principals_assistant_does_not_exist(store: Store) -> None:
    alice, bob = service(store, named("alice")), service(store, named("bob"))
    made = await alice.create(AssistantDraft("steps", name="alice's"))
    aid = made.assistant_id
    assert (await alice.get(aid)).name == "alice's"
    assert (await alice.resolve(aid.upper())).assistant_id == aid
    for attempt in (
        bob.get(aid),
        bob.update(aid, {"name": "bob's now"}),
        bob.set_latest(aid, 1),
        bob.delete(aid),
        bob.versions(aid),
    ):
        with pytest.raises(AssistantNotFound):
            await attempt
    with pytest.raises(InvalidAssistant):  # a run on it cannot resolve it either
        await bob.resolve(aid)
    # nor can bob take its id, even asking for what exists
    with pytest.raises(AssistantExists):
        await bob.create(AssistantDraft("steps", assistant_id=aid, if_exists="do_nothing"))
    assert await bob.count(AssistantQuery()) == len(GRAPHS)  # the graphs' own only
    assert await alice.count(AssistantQuery()) == len(GRAPHS) + 1
    found, _ = await bob.search(AssistantQuery(), limit=100)
    assert aid not in {a.assistant_id for a in found}
    assert (await alice.get(aid)).name == "alice's"  # unchanged


async def test_create_update_versions_latest_and_delete(store: Store) -> None:
    alice = service(store, named("alice"))
    aid = str(uuid.uuid4())
    draft = AssistantDraft(
        "steps", assistant_id=aid, config={"configurable": {"n": 1}}, metadata={"team": "a"}
    )
    made = await alice.create(draft)
    assert (made.assistant_id, made.version, made.name) == (aid, 1, "Untitled")
    again = await alice.create(AssistantDraft("booking", assistant_id=aid, if_exists="do_nothing"))
    assert again == made  # the existing one, unchanged
    with pytest.raises(AssistantExists):
        await alice.create(AssistantDraft("steps", assistant_id=aid))

    # given fields replace theirs, metadata merges, description None clears, other Nones
    # are as if absent
    described = await alice.update(aid, {"description": "d", "name": "named"})
    assert (described.version, described.description, described.name) == (2, "d", "named")
    changed = await alice.update(
        aid, {"metadata": {"x": 1}, "description": None, "name": None, "graph_id": "booking"}
    )
    assert (changed.version, changed.graph_id, changed.name) == (3, "booking", "named")
    assert changed.metadata == {"team": "a", "x": 1} and changed.description is None
    assert [v.version for v in await alice.versions(aid)] == [3, 2, 1]
    assert [v.version for v in await alice.versions(aid, limit=1, offset=1)] == [2]
    assert [v.version for v in await alice.versions(aid, metadata={"x": 1})] == [3]
    back = await alice.set_latest(aid, 1)
    assert (back.version, back.graph_id, back.metadata) == (1, "steps", {"team": "a"})
    assert (await alice.get(aid)).graph_id == "steps"
    with pytest.raises(AssistantNotFound):
        await alice.set_latest(aid, 9)
    with pytest.raises(UnknownGraph):  # refused before anything is written
        await alice.update(aid, {"graph_id": "nope"})
    assert len(await alice.versions(aid)) == 3

    await alice.delete(aid)
    with pytest.raises(AssistantNotFound):
        await alice.get(aid)
    with pytest.raises(AssistantNotFound):
        await alice.delete(aid)


async def test_bad_requests_are_refused_before_anything_is_written(store: Store) -> None:
    alice = service(store, named("alice"))
    with pytest.raises(UnknownGraph):
        await alice.create(AssistantDraft("nope"))
    with pytest.raises(InvalidAssistant) as by_name:
        await alice.create(AssistantDraft("steps", assistant_id="my-assistant"))
    assert "must be a UUID" in str(by_name.value)
    with pytest.raises(InvalidAssistant) as unknown:
        await alice.resolve("nope")
    assert str(unknown.value) == (
        "Invalid assistant: 'nope'. Must be either a valid assistant UUID or one of the "
        "registered graphs: steps, booking"
    )
    assert await alice.count(AssistantQuery()) == len(GRAPHS)


async def test_system_assistants_are_read_only_and_everyones(store: Store) -> None:
    alice = service(store, named("alice"))
    steps = system_assistant_id("steps")
    for name in ("steps", steps):
        assert (await alice.get(name)).assistant_id == steps
        assert (await alice.resolve(name)).graph_id == "steps"
        for attempt in (
            alice.update(name, {"name": "mine"}),
            alice.delete(name),
            alice.set_latest(name, 1),
        ):
            with pytest.raises(SystemAssistantReadOnly):
                await attempt
    with pytest.raises(AssistantExists):  # its id is taken
        await alice.create(AssistantDraft("steps", assistant_id=steps))
    same = await alice.create(AssistantDraft("steps", assistant_id=steps, if_exists="do_nothing"))
    assert same.metadata == {"created_by": "system"}
    assert [v.assistant_id for v in await alice.versions("steps")] == [steps]
    assert await alice.versions("steps", offset=1) == []
    assert await alice.versions("steps", metadata={"created_by": "me"}) == []
    assert (await service(store, named("bob")).get("booking")).graph_id == "booking"


async def test_search_merges_system_and_stored_assistants_in_one_order(store: Store) -> None:
    alice = service(store, named("alice"))
    for name in ("c", "a", "zz"):
        await alice.create(AssistantDraft("steps", name=name))
    everything = AssistantQuery()
    names = [a.name async for a in _pages(alice, everything, "name", "asc", 2)]
    assert names == ["a", "booking", "c", "steps", "zz"]
    page, total = await alice.search(everything, limit=2, offset=1, sort_by="name")
    assert total == 5 and [a.name for a in page] == ["steps", "c"]  # desc by default
    assert await alice.count(AssistantQuery(graph_id="steps")) == 4
    assert await alice.count(AssistantQuery(name="Z")) == 1
    found, total = await alice.search(AssistantQuery(metadata={"created_by": "system"}))
    assert total == 2 and {a.graph_id for a in found} == {"steps", "booking"}


async def _pages(
    svc: AssistantService, query: AssistantQuery, by: str, order: str, size: int
) -> AsyncIterator[Assistant]:
    """Every assistant the query finds, page after page."""
    offset = 0
    while True:
        page, total = await svc.search(
            query, limit=size, offset=offset, sort_by=by, sort_order=order
        )
        for a in page:
            yield a
        offset += len(page)
        if not page or offset >= total:
            return


async def test_under_an_apps_auth_py_the_handlers_stamp_and_filter(store: Store) -> None:
    alice, bob = as_user(store, named("alice")), as_user(store, named("bob"))
    made = await alice.create(AssistantDraft("steps", metadata={"team": "x"}))
    aid = made.assistant_id
    assert made.metadata == {"team": "x", "owner": alice.principal}  # stamped by assistants.create
    assert (await alice.get(aid)).assistant_id == aid
    # shared across principals (no scope), so the handler's filter is what hides it
    assert bob.owners.scope is None
    for attempt in (
        bob.get(aid),
        bob.update(aid, {"name": "taken"}),
        bob.set_latest(aid, 1),
        bob.delete(aid),
    ):
        with pytest.raises(AssistantNotFound):
            await attempt
    assert await bob.versions(aid) == []
    with pytest.raises(AssistantNotFound):  # a run on it takes assistants.read too
        await bob.runnable(await bob.resolve(aid), aid)
    await alice.runnable(made, aid)
    with pytest.raises(AssistantExists):  # nor can bob take it over by its id
        await bob.create(AssistantDraft("steps", assistant_id=aid, if_exists="do_nothing"))
    # the owner filter leaves the graphs' own assistants out of a search, as on
    # LangGraph's server, but a run on a graph is threads.create_run's to allow
    assert await bob.count(AssistantQuery()) == 0
    assert [a.assistant_id for a in (await alice.search(AssistantQuery()))[0]] == [aid]
    with pytest.raises(AssistantNotFound):
        await alice.get("steps")
    await bob.runnable(await bob.resolve("steps"), "steps")
    # the owner's update keeps the stamps
    changed = await alice.update(aid, {"name": "renamed", "metadata": {"v": 2}})
    assert changed.metadata == {"team": "x", "owner": alice.principal, "v": 2}
    await alice.delete(aid)
    assert await alice.count(AssistantQuery()) == 0


NO_CREATE = Auth()


@NO_CREATE.on.assistants.create
async def _never(ctx: Auth.types.AuthContext, value: Any) -> bool:
    return False


async def test_a_handler_that_refuses_writes_nothing(store: Store) -> None:
    rita = named("rita")
    user = User({"identity": rita})
    refusing = AssistantService(store, registry(app_auth=True), rita, Authz(NO_CREATE, user))
    with pytest.raises(Forbidden):
        await refusing.create(AssistantDraft("steps"))
    assert await service(store, rita).count(AssistantQuery(graph_id="steps")) == 1  # its graph's
