"""One owner for every thread, on every face (service/owners.py).

The leak this closes: alice makes a thread with state and no run (``POST /threads``, then
``POST /threads/{t}/state``); bob, with his own key, started a run on it through ``/v1``,
A2A's ``contextId`` or MCP's ``outlast/thread_id``, and his run read her checkpoint. Those
faces asked the thread's latest run whose it was; a thread with no run had none. Now the
thread row's owner is asked on every face, and the run insert refuses again in its own
statement (tests/store_contract/test_threads.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import new_data_part
from a2a.utils.errors import InvalidParamsError
from mcp.shared.exceptions import MCPError

from outlast.store import Store
from tests.a2a_client import Agent, message
from tests.harness import ALICE, BOB, KEYS, Server, auth, eventually, make_settings, serve
from tests.mcp_client import connect
from tests.util import cron_runs

SECRET = "alice-secret"


@contextlib.asynccontextmanager
async def two_tenants(store: Store, tmp_path: Path) -> AsyncIterator[Server]:
    settings = make_settings(api_keys=KEYS, data_dir=tmp_path, result_wait_max=20)
    async with serve(store, settings) as srv:
        yield srv


async def alices_thread(srv: Server) -> str:
    """A thread with state and no run, as alice makes it on the LangGraph face."""
    body = {"metadata": {"graph_id": "lg_hitl"}}
    made = await srv.client.post("/threads", json=body, headers=auth(ALICE))
    assert made.status_code == 200, made.text
    thread_id: str = made.json()["thread_id"]
    state = {"values": {"topic": SECRET}, "as_node": "think"}
    wrote = await srv.client.post(f"/threads/{thread_id}/state", json=state, headers=auth(ALICE))
    assert wrote.status_code == 200, wrote.text
    return thread_id


async def untouched(srv: Server, store: Store, thread_id: str) -> None:
    """Alice's thread as she left it: her state, no run, her own."""
    assert await store.latest_run(thread_id) is None
    (row,) = await store.lg_threads(thread_id=thread_id)
    assert row.principal == "alice"
    state = await srv.client.get(f"/threads/{thread_id}/state", headers=auth(ALICE))
    assert state.json()["values"] == {"topic": SECRET}


def no_secret(*answers: Any) -> None:
    for answer in answers:
        assert SECRET not in str(answer)


async def test_v1_refuses_a_run_on_another_principals_thread_with_no_run(
    store: Store, tmp_path: Path
) -> None:
    async with two_tenants(store, tmp_path) as srv:
        thread_id = await alices_thread(srv)
        body = {"graph": "lg_hitl", "thread_id": thread_id, "input": {}}
        refused = await srv.client.post("/v1/runs", json=body, headers=auth(BOB))
        assert refused.status_code == 422, refused.text
        assert refused.json()["title"] == "Thread unavailable"
        on_thread = await srv.client.post(
            f"/v1/threads/{thread_id}/runs", json={"graph": "lg_hitl"}, headers=auth(BOB)
        )
        assert on_thread.status_code == 422, on_thread.text
        for path in (f"/v1/threads/{thread_id}/state", f"/v1/threads/{thread_id}/history"):
            assert (await srv.client.get(path, headers=auth(BOB))).status_code == 404
        no_secret(refused.text, on_thread.text)
        await untouched(srv, store, thread_id)
        # the owner runs on her own thread, from her state
        mine = await srv.client.post("/v1/runs", json=body, headers=auth(ALICE))
        assert mine.status_code == 202, mine.text


async def test_a2a_refuses_another_principals_thread_as_its_context(
    store: Store, tmp_path: Path
) -> None:
    async with (
        two_tenants(store, tmp_path) as srv,
        httpx.AsyncClient(timeout=60, headers=auth(BOB)) as bobs,
    ):
        thread_id = await alices_thread(srv)
        sent = message(new_data_part({}))
        sent.context_id = thread_id
        with pytest.raises(InvalidParamsError, match="cannot be used") as refused:
            await Agent(bobs, srv.url).send("lg_hitl", sent)
        no_secret(refused.value)
        await untouched(srv, store, thread_id)


async def test_mcp_refuses_another_principals_thread_in_its_meta(
    store: Store, tmp_path: Path
) -> None:
    async with two_tenants(store, tmp_path) as srv:
        thread_id = await alices_thread(srv)
        async with connect(srv.url, BOB) as peer:
            meta: Any = {"outlast/thread_id": thread_id}
            with pytest.raises(MCPError, match="cannot be used") as refused:
                await peer.session.call_tool("lg_hitl", {"topic": "bob's"}, meta=meta)
        no_secret(refused.value)
        await untouched(srv, store, thread_id)


async def test_the_langgraph_face_says_the_thread_does_not_exist(
    store: Store, tmp_path: Path
) -> None:
    """What the LangGraph face answered already, for comparison: not found."""
    async with two_tenants(store, tmp_path) as srv:
        thread_id = await alices_thread(srv)
        run = {"assistant_id": "lg_hitl", "input": {}}
        waited = await srv.client.post(
            f"/threads/{thread_id}/runs/wait", json=run, headers=auth(BOB)
        )
        assert waited.status_code == 404, waited.text
        no_secret(waited.text)
        await untouched(srv, store, thread_id)


async def threads_made_every_way(srv: Server, store: Store) -> dict[str, str]:
    """One thread of alice's for each way a thread comes to be, by its way."""
    c, alice = srv.client, auth(ALICE)
    made: dict[str, str] = {"created": await alices_thread(srv)}
    steps = {"updates": [{"values": {"topic": SECRET}, "as_node": "think"}]}
    body = {"metadata": {"graph_id": "lg_hitl"}, "supersteps": [steps]}
    made["supersteps"] = (await c.post("/threads", json=body, headers=alice)).json()["thread_id"]
    copied = await c.post(f"/threads/{made['created']}/copy", headers=alice)
    made["copy"] = copied.json()["thread_id"]
    run = await c.post("/v1/runs", json={"graph": "steps", "input": {}}, headers=alice)
    made["v1 run"] = run.json()["thread_id"]
    async with httpx.AsyncClient(timeout=60, headers=alice) as http:
        sent = message(new_data_part({}))
        task = await Agent(http, srv.url).send("steps", sent, return_immediately=True)
        made["a2a context"] = task.context_id
    async with connect(srv.url, ALICE) as peer:
        task_id = await peer.call_as_task("lg_slow", {})
    mcp_run = await store.get_run(task_id)
    assert mcp_run is not None
    made["mcp call"] = mcp_run.thread_id
    cron = {"assistant_id": "steps", "schedule": "* * * * * *", "input": {}}
    made_cron = await c.post("/runs/crons", json=cron, headers=alice)
    assert made_cron.status_code == 200, made_cron.text
    cron_id = made_cron.json()["cron_id"]

    async def ticked() -> str | None:
        runs = await cron_runs(store, cron_id, "alice")
        return runs[0][1].thread_id if runs else None

    made["cron tick"] = await eventually(ticked, what="the cron's first tick")
    await c.delete(f"/runs/crons/{cron_id}", headers=alice)
    return made


async def test_a_thread_made_any_way_is_its_makers_on_every_face(
    store: Store, tmp_path: Path
) -> None:
    async with two_tenants(store, tmp_path) as srv:
        made = await threads_made_every_way(srv, store)
        rows = {way: await store.lg_threads(thread_id=t) for way, t in made.items()}
        assert {way: [r.principal for r in found] for way, found in rows.items()} == {
            way: ["alice"] for way in made
        }
        before = {way: await store.latest_run(t) for way, t in made.items()}
        async with (
            httpx.AsyncClient(timeout=60, headers=auth(BOB)) as bobs,
            connect(srv.url, BOB) as peer,
        ):
            for way, thread_id in made.items():
                body = {"graph": "steps", "thread_id": thread_id, "input": {}}
                v1 = await srv.client.post("/v1/runs", json=body, headers=auth(BOB))
                assert v1.status_code == 422, (way, v1.text)
                sent = message(new_data_part({}))
                sent.context_id = thread_id
                with pytest.raises(InvalidParamsError, match="cannot be used"):
                    await Agent(bobs, srv.url).send("steps", sent)
                meta: Any = {"outlast/thread_id": thread_id}
                with pytest.raises(MCPError, match="cannot be used"):
                    await peer.session.call_tool("lg_hitl", {"topic": "x"}, meta=meta)
                lg = await srv.client.post(
                    f"/threads/{thread_id}/runs", json={"assistant_id": "steps"}, headers=auth(BOB)
                )
                assert lg.status_code == 404, (way, lg.text)
        after = {way: await store.latest_run(t) for way, t in made.items()}
        assert {w: r and r.id for w, r in after.items()} == {
            w: r and r.id for w, r in before.items()
        }
