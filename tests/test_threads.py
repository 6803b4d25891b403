"""Threads go on with new runs; their state and history; retention and gaps."""

from __future__ import annotations

import asyncio

from outlast.store import Store
from tests.harness import answer, collect, post_run, serve, wait_result, wait_status

HELLO = {"messages": [{"role": "user", "content": "hello"}]}


async def test_thread_continues_from_its_latest_checkpoint(store: Store) -> None:
    async with serve(store) as srv:
        first = await post_run(srv.client, input=HELLO, thread_id="conv-1")
        await wait_result(srv.client, first["id"])
        response = await srv.client.post(
            "/v1/threads/conv-1/runs",
            json={"input": {"messages": [{"role": "user", "content": "again"}]}},
        )
        assert response.status_code == 202
        second = response.json()
        assert second["thread_id"] == "conv-1" and second["graph"] == "steps"
        final = await wait_result(srv.client, second["id"])
        # the state carried over: both runs' steps and all four messages
        assert len(final["result"]["steps"]) == 10
        assert [m["content"] for m in final["result"]["messages"]][::2] == ["hello", "again"]

        state = (await srv.client.get("/v1/threads/conv-1/state")).json()
        assert state["latest_run"] == {"id": second["id"], "status": "completed"}
        assert state["next"] == [] and len(state["values"]["steps"]) == 10
        page = (await srv.client.get("/v1/threads/conv-1/history", params={"limit": 5})).json()
        assert len(page["checkpoints"]) == 5 and page["next_cursor"]
        older = (
            await srv.client.get(
                "/v1/threads/conv-1/history", params={"limit": 100, "before": page["next_cursor"]}
            )
        ).json()
        ids = [c["checkpoint_id"] for c in page["checkpoints"] + older["checkpoints"]]
        assert len(ids) == len(set(ids)) == 14  # 7 checkpoints per run (input + 5 steps + start)
        assert older["next_cursor"] is None
        missing = await srv.client.get("/v1/threads/nope/state")
        assert missing.status_code == 404
        assert missing.headers["content-type"] == "application/problem+json"


async def test_a_busy_thread_refuses_a_new_run_unless_asked_to_enqueue(store: Store) -> None:
    async with serve(store) as srv:
        asking = await post_run(srv.client, graph="asks", thread_id="busy")
        wait = (await wait_status(srv.client, asking["id"], "waiting"))["wait"]
        refused = await srv.client.post("/v1/threads/busy/runs", json={"input": {}})
        assert refused.status_code == 409
        assert asking["id"] in refused.json()["detail"]
        runs = (await srv.client.get("/v1/runs", params={"thread_id": "busy"})).json()["runs"]
        assert len(runs) == 1  # the refusal wrote nothing
        queued = await srv.client.post(
            "/v1/threads/busy/runs", json={"input": {"name": "x"}, "if_busy": "enqueue"}
        )
        assert queued.status_code == 202 and queued.json()["graph"] == "asks"
        await asyncio.sleep(0)
        assert (await srv.client.get(f"/v1/runs/{queued.json()['id']}")).json()[
            "status"
        ] == "queued"
        assert (await answer(srv, asking["id"], wait["id"], "Ada")).status_code == 202
        await wait_result(srv.client, asking["id"])
        # the queued run starts only now, on the same thread, and asks again
        second = await wait_status(srv.client, queued.json()["id"], "waiting")
        assert second["wait"]["prompt"] == "What is your name?"
        mismatch = await srv.client.post(
            "/v1/threads/busy/runs", json={"input": {}, "thread_id": "other"}
        )
        assert mismatch.status_code == 422


async def test_retention_by_count_and_age_then_gap(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, input=HELLO)
        await wait_result(srv.client, run["id"])
        full = await collect(srv.client, run["id"])
        await store.prune(keep=4, max_age=3600)
        events = await collect(srv.client, run["id"])
        assert events[0].event == "gap"
        assert events[0].data["data"] == {
            "requested_after": 0,
            "oldest_available": len(full) - 3,
            "reason": "events up to this point were pruned by retention",
        }
        assert events[1].event == "snapshot" and events[1].data["data"]["id"] == run["id"]
        assert [e.id for e in events[2:]] == [e.id for e in full[-4:]]
        await store.prune(keep=1000, max_age=0.0001)  # everything is older than that
        await asyncio.sleep(0.01)
        await store.prune(keep=1000, max_age=0.0001)
        gone = await collect(srv.client, run["id"], after=3)
        assert [e.event for e in gone] == ["gap", "snapshot"]  # then the stream ends
        assert gone[0].data["data"]["oldest_available"] is None
