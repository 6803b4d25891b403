"""A LangGraph app's ``auth.py`` on assistants and crons, through the real
``langgraph_sdk``: ``assistants.*`` and ``crons.*`` handlers stamp what is made and
filter what is read, searched, counted, changed and deleted (carol's two tokens are one
principal, each token sees its project's); system assistants are filtered as LangGraph's
server filters them; a cron's tick runs as the user who made the cron, and the thread a
stateless tick makes carries the cron's stamps."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError

from outlast.store import Store
from outlast.store.base import system_assistant_id
from tests.harness import NotYet, eventually, serve
from tests.user_auth_support import ALICE, CAROL_P1, CAROL_P2, settings
from tests.util import cron_runs

EVERY_SECOND = "* * * * * *"
YEARLY = "0 0 1 1 *"


async def test_assistants_are_stamped_and_filtered(store: Store, tmp_path: Path) -> None:
    async with serve(store, settings(tmp_path), with_worker=False) as srv:
        p1, p2 = srv.sdk(headers=CAROL_P1), srv.sdk(headers=CAROL_P2)
        made = await p1.assistants.create("hitl", name="p1's", metadata={"team": "x"})
        aid = made["assistant_id"]
        assert made["metadata"] == {"team": "x", "owner": "carol", "projects": ["p1"]}
        assert [a["assistant_id"] for a in await p1.assistants.search()] == [aid]
        assert await p1.assistants.count() == 1
        assert await p2.assistants.search() == [] and await p2.assistants.count() == 0
        for call in (
            p2.assistants.get(aid),
            p2.assistants.get_graph(aid),
            p2.assistants.get_schemas(aid),
            p2.assistants.update(aid, name="taken"),
            p2.assistants.set_latest(aid, 1),
            p2.assistants.delete(aid),
        ):
            with pytest.raises(NotFoundError):
                await call
        assert await p2.assistants.get_versions(aid) == []
        with pytest.raises(ConflictError):  # p2 cannot take it over by its id either
            await p2.assistants.create("hitl", assistant_id=aid, if_exists="do_nothing")
        # the owner's update keeps the stamps and is seen by the owner alone
        changed = await p1.assistants.update(aid, name="renamed", metadata={"v": 2})
        assert changed["metadata"]["projects"] == ["p1"] and changed["name"] == "renamed"
        assert [v["version"] for v in await p1.assistants.get_versions(aid)] == [2, 1]
        assert (await p1.assistants.get_schemas(aid))["graph_id"] == "hitl"
        await p1.assistants.delete(aid)
        assert await p1.assistants.count() == 0


async def test_system_assistants_are_filtered_as_langgraph_filters_them(
    store: Store, tmp_path: Path
) -> None:
    """The fixture's handler filters every assistant by its owner: the graphs' own
    assistants (``created_by: system``) are left out, as on LangGraph's server; a run
    still names its graph (``threads.create_run`` decides)."""
    async with serve(store, settings(tmp_path)) as srv:
        alice = srv.sdk(headers=ALICE)
        assert await alice.assistants.search() == [] and await alice.assistants.count() == 0
        with pytest.raises(NotFoundError):
            await alice.assistants.get(system_assistant_id("hitl"))
        with pytest.raises(NotFoundError):
            await alice.assistants.get_graph("hitl")
        thread = await alice.threads.create()
        done = await alice.runs.wait(thread["thread_id"], "whoami", input={"topic": "?"})
        assert isinstance(done, dict) and done["who"] == "alice"


async def test_crons_are_stamped_and_filtered(store: Store, tmp_path: Path) -> None:
    async with serve(store, settings(tmp_path), with_worker=False) as srv:
        p1, p2 = srv.sdk(headers=CAROL_P1), srv.sdk(headers=CAROL_P2)
        made = await p1.crons.create("hitl", schedule=YEARLY, metadata={"team": "x"})
        cid = made["cron_id"]
        assert made["metadata"] == {"team": "x", "owner": "carol", "projects": ["p1"]}
        assert [c["cron_id"] for c in await p1.crons.search()] == [cid]
        assert await p1.crons.count() == 1
        assert await p2.crons.search() == [] and await p2.crons.count() == 0
        with pytest.raises(NotFoundError):
            await p2.crons.update(cid, enabled=False)
        with pytest.raises(NotFoundError):
            await p2.crons.delete(cid)
        assert (await p1.crons.search())[0]["enabled"] is True  # p2 changed nothing
        changed = await p1.crons.update(cid, enabled=False, metadata={"v": 2})
        assert changed["metadata"]["projects"] == ["p1"] and changed["enabled"] is False
        await p1.crons.delete(cid)
        assert await p1.crons.count() == 0


async def test_a_ticks_run_is_its_creators(store: Store, tmp_path: Path) -> None:
    """No request, no handler: the tick's run carries the user who made the cron (the
    graph reads it from its config) and its new thread the cron's stamps, so the
    creator's token finds it and the other project's does not."""
    async with serve(store, settings(tmp_path)) as srv:
        p1, p2 = srv.sdk(headers=CAROL_P1), srv.sdk(headers=CAROL_P2)
        cron = await p1.crons.create(
            "whoami", schedule=EVERY_SECOND, input={"topic": "tick"}, on_run_completed="keep"
        )

        async def ended() -> str:
            for _, run in await cron_runs(store, cron["cron_id"], principal="carol"):
                if run.terminal:
                    return run.thread_id
            raise NotYet("no tick's run ended")

        tid = await eventually(ended, what="a tick's run ended")
        await p1.crons.delete(cron["cron_id"])
        thread = await p1.threads.get(tid)
        assert thread["metadata"]["projects"] == ["p1"], thread["metadata"]
        state = await p1.threads.get_state(tid)
        assert state["values"]["who"] == "carol", state
        with pytest.raises(NotFoundError):
            await p2.threads.get(tid)
