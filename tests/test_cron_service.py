"""The cron service (``service/crons.py``) on both backends, without HTTP: what a request
to ``/runs/crons`` decides (whose thread and cron, the schedule, the run request checked,
the app's ``crons.*`` handlers) and the run a tick makes, through the face's own
acceptance (``api/lg/cron_runs.py``), once per tick."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

import pytest

from outlast.api.lg.cron_runs import firer
from outlast.errors import InvalidAssistant, InvalidCron, ThreadNotFound
from outlast.graph.registry import GraphRegistry
from outlast.service.authz import Authz, User
from outlast.service.crons import CronDraft, CronService, TickRun
from outlast.store import Assistant, Store
from outlast.store.base import system_assistant_id
from outlast.store.crons import CronNotFound, Tick
from tests.harness import make_settings
from tests.user_auth_app import auth
from tests.util import cron_runs

GRAPHS = {"steps": "outlast.graph.example:graph", "booking": "outlast.graph.booking:graph"}
STEPS = system_assistant_id("steps")
YEARLY = "0 0 1 1 *"
DAILY = "0 9 * * *"


def registry(*, app_auth: bool = False) -> GraphRegistry:
    return GraphRegistry(GRAPHS, app_auth=app_auth)


def named(name: str) -> str:
    """A principal of this test alone (the session's Postgres database keeps what other
    tests made, by principals of the same names)."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def service(store: Store, principal: str) -> CronService:
    return CronService(store, registry(), principal)


def as_user(store: Store, identity: str) -> CronService:
    """Under ``tests/user_auth_app.py``'s ``auth.py``: stamped and filtered by owner."""
    user = User({"identity": identity, "permissions": []})
    return CronService(store, registry(app_auth=True), identity, Authz(auth, user, shared=True))


class Checks:
    """The face's check of a cron's run request, as the service is handed it: here the
    assistant resolved as the service's own would, every request remembered."""

    def __init__(self, svc: CronService, refuse: bool = False) -> None:
        self.svc = svc
        self.refuse = refuse
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, assistant_id: str, payload: Mapping[str, Any]) -> Assistant:
        self.asked.append((assistant_id, dict(payload)))
        if self.refuse:
            raise InvalidAssistant("refused by the face's check")
        return await self.svc.assistants.resolve(assistant_id)


async def thread_of(store: Store, principal: str) -> str:
    thread_id = str(uuid.uuid4())
    await store.lg_create_thread(thread_id, principal, {})
    return thread_id


async def test_another_principals_thread_and_crons_do_not_exist(store: Store) -> None:
    alice, bob = service(store, named("alice")), service(store, named("bob"))
    thread = await thread_of(store, alice.principal)
    mine = await alice.create(thread, CronDraft("steps", YEARLY, {}), Checks(alice))
    assert (mine.principal, mine.thread_id, mine.assistant_id) == (alice.principal, thread, STEPS)
    checks = Checks(bob)
    for where in (thread, str(uuid.uuid4())):
        with pytest.raises(ThreadNotFound):
            await bob.create(where, CronDraft("steps", YEARLY, {}), checks)
    assert checks.asked == []  # refused before the request is looked at
    with pytest.raises(CronNotFound):
        await bob.update(mine.cron_id, {"enabled": False}, checks)
    with pytest.raises(CronNotFound):
        await bob.delete(mine.cron_id)
    assert await bob.search() == ([], 0) and await bob.count() == 0
    found, total = await alice.search()
    assert total == 1 and [c.cron_id for c in found] == [mine.cron_id]
    assert found[0].enabled is True  # unchanged by bob


async def test_create_checks_the_schedule_and_the_run_request_first(store: Store) -> None:
    alice = service(store, named("alice"))
    checks = Checks(alice)
    for draft, field in (
        (CronDraft("steps", "every day", {}), "schedule"),
        (CronDraft("steps", "0 0 31 2 *", {}), "schedule"),  # never fires
        (CronDraft("steps", YEARLY, {}, timezone="Mars/Olympus_Mons"), "timezone"),
    ):
        with pytest.raises(InvalidCron) as refused:
            await alice.create(None, draft, checks)
        assert refused.value.status == 422 and str(refused.value).startswith(f"{field}:")
    assert checks.asked == []
    with pytest.raises(InvalidAssistant):
        await alice.create(None, CronDraft("nope", YEARLY, {"input": 1}), Checks(alice, True))
    assert await alice.count() == 0  # nothing stored

    payload = {"input": {"n": 1}, "webhook": "https://hooks.example.com/x"}
    naive = dt.datetime(2099, 1, 1)
    stateless = await alice.create(
        None, CronDraft("steps", DAILY, payload, end_time=naive, metadata={"team": "a"}), checks
    )
    assert checks.asked == [("steps", payload)]
    assert (stateless.thread_id, stateless.on_run_completed) == (None, "delete")
    assert stateless.end_time == naive.replace(tzinfo=dt.UTC)  # a time without a zone is UTC
    assert (stateless.payload, stateless.metadata) == (payload, {"team": "a"})
    assert stateless.next_run_at is not None
    kept = await alice.create(None, CronDraft("steps", DAILY, {}, on_run_completed="keep"), checks)
    assert kept.on_run_completed == "keep"
    thread = await thread_of(store, alice.principal)
    on_thread = await alice.create(
        thread, CronDraft("steps", DAILY, {}, on_run_completed="keep", enabled=False), checks
    )
    assert on_thread.on_run_completed is None  # a thread's cron keeps its thread
    assert on_thread.next_run_at is None  # disabled


async def test_update_replans_merges_and_checks_again(store: Store) -> None:
    alice = service(store, named("alice"))
    thread = await thread_of(store, alice.principal)
    checks = Checks(alice)
    made = await alice.create(
        thread, CronDraft("steps", YEARLY, {"input": {"n": 1}}, metadata={"team": "a"}), checks
    )
    changed = await alice.update(
        made.cron_id,
        {"schedule": DAILY, "metadata": {"x": 1}, "input": {"n": 2}, "on_run_completed": "keep"},
        checks,
    )
    assert checks.asked[-1] == (STEPS, {"input": {"n": 2}})  # the payload as it will be
    assert changed.schedule == DAILY and changed.next_run_at != made.next_run_at
    assert changed.metadata == {"team": "a", "x": 1} and changed.payload == {"input": {"n": 2}}
    assert changed.on_run_completed is None
    asked = len(checks.asked)
    off = await alice.update(made.cron_id, {"enabled": False, "timezone": None}, checks)
    assert off.enabled is False and off.next_run_at is None
    assert len(checks.asked) == asked  # no run field: the request is not checked again
    ends = await alice.update(made.cron_id, {"end_time": dt.datetime(2099, 1, 1)}, checks)
    assert ends.end_time == dt.datetime(2099, 1, 1, tzinfo=dt.UTC)
    cleared = await alice.update(made.cron_id, {"end_time": None}, checks)
    assert cleared.end_time is None
    with pytest.raises(InvalidCron):
        await alice.update(made.cron_id, {"timezone": "Nowhere/Else"}, checks)
    with pytest.raises(InvalidAssistant):
        await alice.update(made.cron_id, {"input": {"n": 3}}, Checks(alice, refuse=True))
    found, _ = await alice.search()
    assert found == [cleared]  # the refused updates changed nothing

    await alice.delete(made.cron_id)
    with pytest.raises(CronNotFound):
        await alice.delete(made.cron_id)
    assert await alice.count() == 0


async def test_search_and_count_filter_and_page(store: Store) -> None:
    alice = service(store, named("alice"))
    checks = Checks(alice)
    thread = await thread_of(store, alice.principal)
    first = await alice.create(thread, CronDraft("steps", YEARLY, {}, metadata={"k": 1}), checks)
    second = await alice.create(None, CronDraft("booking", YEARLY, {}), checks)
    third = await alice.create(None, CronDraft("steps", YEARLY, {}, enabled=False), checks)
    ids = sorted(c.cron_id for c in (first, second, third))
    found, total = await alice.search(limit=2, sort_by="cron_id", sort_order="asc")
    assert total == 3 and [c.cron_id for c in found] == ids[:2]
    found, total = await alice.search(limit=2, offset=2, sort_by="cron_id", sort_order="asc")
    assert total == 3 and [c.cron_id for c in found] == ids[2:]
    assert await alice.count(assistant_id="steps") == 2  # a graph's name: its assistant
    assert await alice.count(assistant_id=STEPS) == 2
    assert await alice.count(assistant_id=str(uuid.uuid4())) == 0
    assert await alice.count(thread_id=thread) == 1
    assert await alice.count(metadata={"k": 1}) == 1
    assert [c.cron_id for c in (await alice.search(enabled=False))[0]] == [third.cron_id]


async def test_a_tick_fires_the_crons_request_as_its_creator(store: Store) -> None:
    alice = service(store, named("alice"))
    thread = await thread_of(store, alice.principal)
    cron = await alice.create(
        thread, CronDraft("steps", YEARLY, {"input": {"n": 1}}, metadata={"m": 1}), Checks(alice)
    )
    tick = Tick(cron, dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    made: list[TickRun] = []

    async def make(run: TickRun) -> str:
        made.append(run)
        return "lg-run"

    # whoever the service is bound to, a tick runs as the cron's creator
    assert await service(store, named("bob")).fire(tick, make) == "lg-run"
    (run,) = made
    assert (run.principal, run.thread_id, run.assistant_id) == (alice.principal, thread, STEPS)
    assert run.metadata == {"m": 1, "cron_id": cron.cron_id}
    assert run.payload == {"input": {"n": 1}} and run.key == tick.key
    assert run.on_completion is None and run.authz == Authz()  # no auth.py: nobody's handlers


async def test_a_tick_makes_one_run_through_the_faces_acceptance(store: Store) -> None:
    alice = service(store, named("alice"))
    thread = await thread_of(store, alice.principal)
    cron = await alice.create(
        thread, CronDraft("steps", YEARLY, {"input": {"n": 1}}), Checks(alice)
    )
    tick = Tick(cron, dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    fire = firer(store, registry(), make_settings())
    lg_id = await fire(tick)
    assert await fire(tick) == lg_id  # fired again (its claimer died): the same run
    ((at, run),) = await cron_runs(store, cron.cron_id, alice.principal)
    assert at == tick.at and run.thread_id == thread and run.graph == "steps"
    assert run.metadata == {"cron_id": cron.cron_id}
    lg = await store.lg_get_run(lg_id)
    assert lg is not None and lg.run_id == run.id and lg.assistant_id == STEPS


async def test_under_an_apps_auth_py_crons_are_stamped_filtered_and_run_as_their_user(
    store: Store,
) -> None:
    alice, bob = as_user(store, named("alice")), as_user(store, named("bob"))
    cron = await alice.create(
        None, CronDraft("steps", YEARLY, {"config": {"configurable": {"x": 1}}}), Checks(alice)
    )
    assert cron.metadata == {"owner": alice.principal}  # stamped by crons.create
    configurable = cron.payload["config"]["configurable"]
    assert configurable["x"] == 1 and configurable["langgraph_auth_user_id"] == alice.principal
    # shared across principals, hidden by the handler's filter
    assert bob.owners.scope is None
    assert await bob.search() == ([], 0) and await bob.count() == 0
    with pytest.raises(CronNotFound):
        await bob.update(cron.cron_id, {"enabled": False}, Checks(bob))
    with pytest.raises(CronNotFound):
        await bob.delete(cron.cron_id)
    assert (await alice.search())[1] == 1
    # a client cannot name another user: the creator's replaces it
    forged = {"configurable": {"langgraph_auth_user_id": bob.principal, "y": 2}}
    changed = await alice.update(cron.cron_id, {"config": forged}, Checks(alice))
    assert changed.payload["config"]["configurable"]["langgraph_auth_user_id"] == alice.principal
    made: list[TickRun] = []

    async def make(run: TickRun) -> str:
        made.append(run)
        return "lg-run"

    await bob.fire(Tick(changed, dt.datetime(2030, 1, 1, tzinfo=dt.UTC)), make)
    (run,) = made
    assert run.principal == alice.principal and run.metadata["owner"] == alice.principal
    assert run.authz.auth is None and run.authz.shared  # no handler asked at a tick
    assert run.authz.user is not None and run.authz.user.identity == alice.principal
