"""LangGraph's own Python clients against outlast's LangGraph face: ``langgraph_sdk`` and
``RemoteGraph``, unchanged, on both backends.

Streams are compared with the run's durable log as the face translates it (a rejoin with
``Last-Event-ID: -1``): a client that was cut and reconnected, or that came back later,
must have seen exactly that, nothing missing and nothing twice.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

from outlast.store import Store
from tests.browser import CutProxy
from tests.harness import eventually, make_settings, serve, wait_result, wait_status
from tests.lg_util import follow_slow, others, reply_of, seq_of, until_status

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789ab"
SYSTEM_CHAT = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "lg_chat"))


def parts(items: list[Any]) -> list[tuple[str, str | None, Any]]:
    return [(p.event, p.id, p.data) for p in items]


async def collect(stream: Any) -> list[Any]:
    return [p async for p in stream]


async def replay(client: Any, thread_id: str, run_id: str) -> list[Any]:
    return await collect(client.runs.join_stream(thread_id, run_id, last_event_id="-1"))


async def test_a_streamed_run_is_the_log_and_rejoins_from_any_event(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = await client.threads.create()
        created: list[Any] = []
        live = await collect(
            client.runs.stream(
                thread["thread_id"],
                "lg_chat",
                input={"messages": [{"role": "user", "content": "hi"}]},
                stream_mode=["values", "messages-tuple", "updates"],
                on_run_created=created.append,
            )
        )
        names = [p.event for p in live]
        assert names[0] == "metadata" and names[-1] == "end"
        assert {"values", "messages", "updates"} <= set(names)
        ids = [seq_of(p.id) for p in live[1:]]
        assert ids == sorted(set(ids)), "ids are the log's seqs (and live chunks): increasing"
        run_id = created[0]["run_id"]
        assert live[0].data["run_id"] == run_id
        reply = "echo(hi) w0 w1 w2 w3 w4 w5"
        assert live[-2].data["messages"][-1]["content"] == reply == reply_of(live)
        chunk, meta = next(p.data for p in live if p.event == "messages")
        assert chunk["type"] == "AIMessageChunk" and meta["langgraph_node"] == "model"
        # a rejoin from the start is the same log (the reply in the pieces the log keeps)
        whole = await replay(client, thread["thread_id"], run_id)
        assert others(whole) == others(live) and reply_of(whole) == reply
        # and from any event, the rest: nothing missing, nothing twice
        for k in range(1, len(live) - 1):
            later = await collect(
                client.runs.join_stream(thread["thread_id"], run_id, last_event_id=live[k].id)
            )
            assert others(later) == others(live[k + 1 :])
            assert reply_of(live[: k + 1]) + reply_of(later) == reply
        # and the same run is an outlast run on /v1
        native = (await srv.client.get(f"/v1/runs/{run_id}")).json()
        assert native["status"] == "completed" and native["thread_id"] == thread["thread_id"]
        state = await client.threads.get_state(thread["thread_id"])
        assert state["values"]["messages"][-1]["content"].startswith("echo(hi)")
        assert (await client.threads.get(thread["thread_id"]))["metadata"]["graph_id"] == "lg_chat"


async def test_subgraph_events_are_named_by_namespace(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = await client.threads.create()
        live = await collect(
            client.runs.stream(
                thread["thread_id"],
                "lg_nested",
                input={"trail": []},
                stream_mode=["values", "updates", "debug"],
                stream_subgraphs=True,
            )
        )
        names = [p.event for p in live]
        assert any(n.startswith("values|inner:") for n in names)
        assert any(n.startswith("updates|inner:") for n in names)
        checkpoints = [
            p.data["payload"] for p in live if p.event == "debug" and p.data["type"] == "checkpoint"
        ]
        assert checkpoints and all(c["checkpoint"]["checkpoint_id"] for c in checkpoints)
        assert checkpoints[-1]["parent_checkpoint"]["thread_id"] == thread["thread_id"]
        # without stream_subgraphs the subgraph's events stay out
        plain = await collect(
            client.runs.stream(None, "lg_nested", input={"trail": []}, stream_mode="updates")
        )
        assert all("|" not in p.event for p in plain)
        assert [p.event for p in plain].count("updates") == 3


async def test_interrupt_resume_and_the_thread_between(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        live = await collect(
            client.runs.stream(
                thread, "lg_hitl", input={"topic": "x"}, stream_mode=["values", "updates"]
            )
        )
        interrupt = live[-2].data["__interrupt__"][0]
        assert live[-2].event == "values" and interrupt["value"]["question"] == "Approve the plan?"
        assert any(p.event == "updates" and "__interrupt__" in p.data for p in live)
        shown = await client.threads.get(thread)
        assert shown["status"] == "interrupted"
        assert [i["id"] for i in next(iter(shown["interrupts"].values()))] == [interrupt["id"]]
        state = await client.threads.get_state(thread)
        assert state["next"] == ["ask"] and state["interrupts"][0]["id"] == interrupt["id"]
        first = (await client.runs.list(thread))[0]
        assert first["status"] == "success"  # as LangGraph's server shows an interrupt()
        done = await client.runs.wait(thread, "lg_hitl", command={"resume": "yes"})
        assert done["done"] == "acted on 'yes'"
        runs = await client.runs.list(thread)
        assert len(runs) == 2 and {r["status"] for r in runs} == {"success"}
        assert runs[0]["outlast_run_id"] == runs[1]["outlast_run_id"] == first["run_id"]
        assert (await client.threads.get(thread))["status"] == "idle"
        # one outlast run: waited once, answered once
        native = (await srv.client.get(f"/v1/runs/{first['run_id']}")).json()
        assert native["status"] == "completed"
        log = (await srv.client.get(f"/v1/runs/{first['run_id']}/events")).text
        assert log.count("event: run.waiting") == 1 and log.count("event: wait.ended") == 1


async def test_a_resume_map_answers_parallel_interrupts_one_by_one(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        paused = await client.runs.wait(thread, "lg_multi", input={})
        ids = [i["id"] for i in paused["__interrupt__"]]
        assert len(ids) == 2
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await client.runs.wait(thread, "lg_multi", command={"resume": "both?"})
        assert refused.value.response.status_code == 409
        assert "multiple pending interrupts" in refused.value.response.json()["detail"]
        half = await client.runs.wait(thread, "lg_multi", command={"resume": {ids[0]: "A"}})
        assert [i["id"] for i in half["__interrupt__"]] == [ids[1]]
        assert (await client.threads.get(thread))["status"] == "interrupted"
        rest = await client.runs.wait(thread, "lg_multi", command={"resume": {ids[1]: "B"}})
        assert sorted(rest["answers"]) == ["left?=A", "right?=B"]
        assert (await client.threads.get(thread))["status"] == "idle"


async def test_strict_resume_refuses_what_matches_nothing(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        info = (await srv.client.get("/info")).json()
        assert info["flags"]["strict_resume"] is True
        idle = (await client.threads.create())["thread_id"]
        with pytest.raises(ConflictError, match="no pending interrupt"):
            await client.runs.create(idle, "lg_hitl", command={"resume": "x"}, strict_resume=True)
        assert await client.runs.list(idle) == []
        thread = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread, "lg_hitl", input={"topic": "t"})
        with pytest.raises(ConflictError, match="not pending"):
            await client.runs.create(
                thread, "lg_hitl", command={"resume": {"0" * 32: "no"}}, strict_resume=True
            )
        assert len(await client.runs.list(thread)) == 1
        assert (await client.threads.get(thread))["status"] == "interrupted"


async def test_two_concurrent_resumes_give_one_resume_and_one_refusal(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread, "lg_hitl", input={"topic": "t"})
        outcomes = await asyncio.gather(
            *(client.runs.create(thread, "lg_hitl", command={"resume": f"r{i}"}) for i in range(2)),
            return_exceptions=True,
        )
        refused = [o for o in outcomes if isinstance(o, ConflictError)]
        accepted = [o for o in outcomes if isinstance(o, dict)]
        assert len(refused) == 1 and len(accepted) == 1, outcomes
        done = await client.runs.join(thread, accepted[0]["run_id"])
        assert done["answer"] in ("r0", "r1")
        assert len(await client.runs.list(thread)) == 2


async def test_new_input_on_an_interrupted_thread_supersedes_the_pause(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        paused = await client.runs.wait(thread, "lg_hitl", input={"topic": "old"})
        assert "__interrupt__" in paused
        fresh = await client.runs.wait(
            thread, "lg_chat", input={"messages": [{"role": "user", "content": "new"}]}
        )
        assert fresh["messages"][-1]["content"].startswith("echo(new)")
        statuses = [r["status"] for r in await client.runs.list(thread)]
        assert statuses == ["success", "success"]  # the paused one is not shown as cancelled


async def test_wait_and_join_report_errors_the_way_the_sdk_raises(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        with pytest.raises(Exception, match="ValueError: kaboom"):
            await client.runs.wait(None, "lg_fail", input={})
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_fail", input={})
        assert run["status"] in ("pending", "running")  # running: started as accepted
        raw = await srv.client.get(f"/threads/{thread}/runs/{run['run_id']}/join")
        assert raw.json() == {"__error__": {"error": "ValueError", "message": "kaboom"}}
        streamed = await collect(client.runs.join_stream(thread, run["run_id"], last_event_id="-1"))
        assert [p.event for p in streamed][-2:] == ["error", "end"]
        assert streamed[-2].data == {"error": "ValueError", "message": "kaboom"}
        assert (await client.threads.get(thread))["status"] == "error"
        assert (await client.runs.get(thread, run["run_id"]))["status"] == "error"


async def test_multitask_strategies(store: Store) -> None:
    slow = {"configurable": {"steps": 50, "delay": 0.1}}
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        first = await client.runs.create(thread, "lg_slow", input={}, config=slow)
        await until_status(client, thread, first["run_id"], "running")
        with pytest.raises(ConflictError, match="already running"):
            await client.runs.create(thread, "lg_slow", input={}, multitask_strategy="reject")
        queued = await client.runs.create(thread, "lg_slow", input={}, config=slow)
        assert queued["status"] == "pending"
        interrupting = await client.runs.create(
            thread, "lg_slow", input={}, multitask_strategy="interrupt"
        )
        await client.runs.join(thread, interrupting["run_id"])
        assert (await client.runs.get(thread, first["run_id"]))["status"] == "interrupted"
        assert (await client.runs.get(thread, queued["run_id"]))["status"] == "interrupted"
        rolling = await client.runs.create(thread, "lg_slow", input={}, config=slow)
        await until_status(client, thread, rolling["run_id"], "running")
        last = await client.runs.create(thread, "lg_slow", input={}, multitask_strategy="rollback")
        await client.runs.join(thread, last["run_id"])
        with pytest.raises(NotFoundError):
            await client.runs.get(thread, rolling["run_id"])
        assert (await client.runs.get(thread, last["run_id"]))["status"] == "success"


async def _values(client: Any, thread: str) -> Any:
    return (await client.threads.get_state(thread))["values"]


async def test_cancel_ends_the_run_and_wait_really_waits(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            thread, "lg_slow", input={}, config={"configurable": {"steps": 100, "delay": 0.1}}
        )
        await until_status(client, thread, run["run_id"], "running")

        async def a_step_done() -> bool:  # mid-run: a step done, 99 to go
            return bool((await _values(client, thread)).get("done"))

        await eventually(a_step_done, what="a step done")
        body = await client.runs.cancel(thread, run["run_id"], wait=True)
        assert isinstance(body, dict) and 0 < len(body["done"]) < 100
        shown = await client.runs.get(thread, run["run_id"])
        assert shown["status"] == "interrupted" and "cancel" in shown["cancel_reason"]
        native = (await srv.client.get(f"/v1/runs/{run['run_id']}")).json()
        assert native["status"] == "cancelled"  # terminal: nothing keeps running
        assert (await client.threads.get(thread))["status"] == "idle"  # not a pause
        kept = (await client.threads.get_state(thread))["values"]
        second = await client.runs.create(
            thread, "lg_slow", input={}, config={"configurable": {"steps": 100, "delay": 0.1}}
        )
        await until_status(client, thread, second["run_id"], "running")

        async def moved_on() -> bool:
            return bool(await _values(client, thread) != kept)

        await eventually(moved_on, what="the second run's first step")
        await client.runs.cancel(thread, second["run_id"], action="rollback")
        with pytest.raises(NotFoundError):
            await client.runs.get(thread, second["run_id"])
        assert (await client.threads.get_state(thread))["values"] == kept  # undone


async def test_bulk_cancel_by_status_follows_the_status_the_client_sees(store: Store) -> None:
    """``pending`` is a run delayed by ``after_seconds`` too, ``running`` a run waiting on
    a timer; a run that asks a person is neither (its LangGraph run ended at the
    interrupt). The bulk cancel once mapped statuses itself and missed the first two."""
    async with serve(store) as srv:
        client = srv.sdk()
        threads = [(await client.threads.create())["thread_id"] for _ in range(3)]
        later = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=600)).isoformat()
        delayed = await client.runs.create(threads[0], "lg_chat", input={}, after_seconds=600)
        sleeping = await client.runs.create(
            threads[1], "sleeper", input={}, config={"configurable": {"until": later}}
        )
        asking = await client.runs.create(threads[2], "lg_hitl", input={"topic": "x"})
        for run in (delayed, sleeping, asking):
            await wait_status(srv.client, run["run_id"], "waiting")
        assert (await client.runs.get(threads[0], delayed["run_id"]))["status"] == "pending"
        assert (await client.runs.get(threads[1], sleeping["run_id"]))["status"] == "running"

        async def native(run: dict[str, Any]) -> str:
            return str((await srv.client.get(f"/v1/runs/{run['run_id']}")).json()["status"])

        await client.runs.cancel_many(status="pending")
        assert [await native(r) for r in (delayed, sleeping, asking)] == [
            "cancelled",
            "waiting",
            "waiting",
        ]
        await client.runs.cancel_many(status="running")
        assert [await native(r) for r in (sleeping, asking)] == ["cancelled", "waiting"]
        await client.runs.cancel_many(status="all")
        assert await native(asking) == "waiting"


async def test_idempotency_key_on_every_run_creating_post(store: Store) -> None:
    async with serve(store) as srv:
        thread = (await srv.client.post("/threads", json={})).json()["thread_id"]
        body = {
            "assistant_id": "lg_chat",
            "input": {"messages": [{"role": "user", "content": "x"}]},
        }
        headers = {"Idempotency-Key": "lg-once"}
        runs = [
            (await srv.client.post(f"/threads/{thread}/runs", json=body, headers=headers)).json()
            for _ in range(3)
        ]
        assert len({r["run_id"] for r in runs}) == 1
        other = await srv.client.post(
            f"/threads/{thread}/runs", json={**body, "input": {}}, headers=headers
        )
        assert other.status_code == 422
        listed = (await srv.client.get(f"/threads/{thread}/runs")).json()
        assert len(listed) == 1


async def test_bad_requests_get_the_status_the_clients_expect_and_write_nothing(
    store: Store,
) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        cases = [
            ("post", f"/threads/{thread}/runs", {"assistant_id": "nope"}, 422),
            ("post", f"/threads/{uuid.uuid4()}/runs", {"assistant_id": "lg_chat"}, 404),
            (
                "post",
                f"/threads/{thread}/runs",
                {
                    "assistant_id": "lg_chat",
                    "config": {"configurable": {"a": 1}},
                    "context": {"b": 2},
                },
                400,
            ),
            ("post", "/runs/wait", {"assistant_id": "lg_hitl", "command": {"resume": 1}}, 400),
            (
                "post",
                f"/threads/{thread}/runs",
                {"assistant_id": "lg_chat", "stream_mode": "x"},
                422,
            ),
            ("post", "/threads", {"thread_id": thread}, 409),
            ("get", f"/threads/{uuid.uuid4()}", None, 404),
            ("get", f"/threads/{thread}/runs/{uuid.uuid4()}", None, 404),
        ]
        for method, path, body, status in cases:
            answer = await srv.client.request(method, path, json=body)
            assert answer.status_code == status, (path, body, answer.text)
            assert isinstance(answer.json()["detail"], str) and answer.json()["detail"]
        assert await client.runs.list(thread) == []
        assert len(await client.threads.search()) == 1
        bad_cursor = await srv.client.get(
            f"/threads/{thread}/runs/{uuid.uuid4()}/stream", headers={"Last-Event-ID": "x"}
        )
        assert bad_cursor.status_code == 404


async def test_threads_search_patch_copy_delete(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        a = await client.threads.create(metadata={"team": "a", "n": 1})
        await client.threads.create(metadata={"team": "b"})
        await client.runs.wait(
            a["thread_id"], "lg_chat", input={"messages": [{"role": "user", "content": "q"}]}
        )
        found = await client.threads.search(metadata={"team": "a"})
        assert [t["thread_id"] for t in found] == [a["thread_id"]]
        assert found[0]["metadata"]["assistant_id"] == SYSTEM_CHAT
        page = await srv.client.post("/threads/search", json={"limit": 1})
        assert (
            page.headers["x-pagination-total"] == "2" and page.headers["x-pagination-next"] == "1"
        )
        assert len(await client.threads.search(status="idle")) == 2
        patched = await client.threads.update(a["thread_id"], metadata={"n": 2})
        assert patched["metadata"]["n"] == 2 and patched["metadata"]["team"] == "a"
        copy = await client.threads.copy(a["thread_id"])
        assert copy["thread_id"] != a["thread_id"]
        copied = await client.threads.get_state(copy["thread_id"])
        assert copied["values"] == (await client.threads.get_state(a["thread_id"]))["values"]
        await client.threads.delete(a["thread_id"])
        with pytest.raises(NotFoundError):
            await client.threads.get(a["thread_id"])
        assert (await srv.client.get("/v1/runs", params={"thread_id": a["thread_id"]})).json()[
            "runs"
        ] == []


async def test_update_state_as_node_and_history(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread, "lg_hitl", input={"topic": "t"})
        history = await client.threads.get_history(thread, limit=10)
        assert history[0]["next"] == ["ask"] and len(history) >= 3
        # a metadata filter LangGraph's SQLite saver cannot query by is the client's error
        odd = await srv.client.post(f"/threads/{thread}/history", json={"metadata": {"a b;": 1}})
        assert odd.status_code == (422 if store.backend == "sqlite" else 200), odd.text
        older = history[-1]["checkpoint"]
        at = await client.threads.get_state(thread, checkpoint=older)
        assert at["checkpoint"]["checkpoint_id"] == older["checkpoint_id"]
        # answer the question by hand, as the node, then go on with a null input
        await client.threads.update_state(thread, {"answer": "by hand"}, as_node="ask")
        assert (await client.threads.get_state(thread))["next"] == ["act"]
        done = await client.runs.wait(thread, "lg_hitl", input=None)
        assert done["done"] == "acted on 'by hand'"
        copy = await client.threads.update_state(thread, None, as_node="__copy__")
        assert copy["checkpoint"]["checkpoint_id"] != history[0]["checkpoint"]["checkpoint_id"]


async def test_remote_graph_invoke_interrupt_resume_state_and_graph(store: Store) -> None:
    async with serve(store) as srv:
        remote = RemoteGraph("lg_hitl", client=srv.sdk())
        config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
        paused = await remote.ainvoke({"topic": "y"}, config)
        assert paused["__interrupt__"][0]["value"]["question"] == "Approve the plan?"
        state = await remote.aget_state(config)
        assert state.next == ("ask",) and state.interrupts[0].value["plan"] == "plan for y"
        done = await remote.ainvoke(Command(resume="ok"), config)
        assert done["done"] == "acted on 'ok'"
        assert "plan" in await remote.ainvoke({"topic": "stateless"})
        history = [s async for s in remote.aget_state_history(config)]
        assert history[0].values["done"] == "acted on 'ok'"
        await remote.aupdate_state(config, {"topic": "edited"})
        assert (await remote.aget_state(config)).values["topic"] == "edited"
        graph = await RemoteGraph("lg_nested", client=srv.sdk()).aget_graph(xray=True)
        assert "inner:inner_a" in graph.nodes


async def test_remote_graph_as_a_subgraph_surfaces_its_interrupt(store: Store) -> None:
    """The remote graph's interrupt reaches the local parent (LangGraph raises it from the
    ``updates`` event). Resuming goes to the remote thread: RemoteGraph does not forward
    a parent's resume value (langgraph#4879), so the server cannot see one."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from tests.lg_graphs import HitlState

    async with serve(store) as srv:
        remote = RemoteGraph("lg_hitl", client=srv.sdk())
        builder = StateGraph(HitlState)
        builder.add_node("remote", remote)
        builder.add_edge(START, "remote")
        local = builder.compile(checkpointer=InMemorySaver())
        config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
        first = await local.ainvoke({"topic": "nested"}, config)
        assert first["__interrupt__"][0].value["question"] == "Approve the plan?"
        remote_config: Any = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}
        assert (await remote.aget_state(remote_config)).next == ("ask",)
        done = await remote.ainvoke(Command(resume="fine"), remote_config)
        assert done["done"] == "acted on 'fine'"


async def test_principals_isolate_threads_and_runs(store: Store) -> None:
    settings = make_settings(api_keys=f"alice:{ALICE},bob:{BOB}")
    async with serve(store, settings) as srv:
        alice = srv.sdk(api_key=ALICE)
        bob = srv.sdk(api_key=BOB)
        thread = await alice.threads.create(metadata={"owner": "alice"})
        run = await alice.runs.wait(thread["thread_id"], "lg_chat", input={"messages": []})
        assert "messages" in run
        with pytest.raises(NotFoundError):
            await bob.threads.get(thread["thread_id"])
        with pytest.raises(NotFoundError):
            await bob.runs.list(thread["thread_id"])
        assert await bob.threads.search() == []
        with pytest.raises(ConflictError):
            await bob.threads.create(thread_id=thread["thread_id"])
        with pytest.raises(httpx.HTTPStatusError) as refused:
            await bob.runs.create(thread["thread_id"], "lg_chat", input={}, if_not_exists="create")
        assert refused.value.response.status_code == 422
        assert len(await alice.runs.list(thread["thread_id"])) == 1


async def test_a_graph_node_gets_its_principals_store(store: Store) -> None:
    settings = make_settings(api_keys=f"alice:{ALICE},bob:{BOB}")
    async with serve(store, settings) as srv:
        alice = srv.sdk(api_key=ALICE)
        bob = srv.sdk(api_key=BOB)
        first = await alice.runs.wait(None, "lg_memory", input={"note": "a1"})
        assert first["recalled"] == ["a1"]
        theirs = await bob.runs.wait(None, "lg_memory", input={"note": "b1"})
        assert theirs["recalled"] == ["b1"]  # alice's note is not in bob's store
        items = await alice.store.search_items(("notes",))
        assert [i["key"] for i in items["items"]] == ["a1"]


async def test_a_proxy_cut_mid_stream_is_rejoined_by_the_sdk(store: Store) -> None:
    """The SDK's own reconnect: through ``Location`` with ``Last-Event-ID``."""
    async with serve(store) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        proxy = CutProxy(port)
        await proxy.start()
        client = get_client(url=f"http://127.0.0.1:{proxy.port}")
        thread = (await client.threads.create())["thread_id"]
        follower = follow_slow(client, thread, steps=12, delay=0.1)
        seen, task = follower.seen, follower.task
        assert task is not None
        await eventually(lambda: len(seen) >= 6, what="six parts streamed")
        assert not task.done() and seen[-1].event != "end"  # cut mid-run
        await proxy.cut()
        await proxy.restore()  # the SDK retries after its backoff (about a second)
        await asyncio.wait_for(task, 60)
        await proxy.close()
        await client.aclose()
        whole = await replay(srv.sdk(), thread, follower.run_id)
        assert parts(seen) == parts(whole)  # metadata once, then every event once


async def test_context_fork_and_durability_options(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        greeted = await client.runs.wait(None, "lg_context", input={}, context={"user": "ana"})
        assert greeted == {"greeting": "hello ana"}
        thread = (await client.threads.create())["thread_id"]
        say = {"messages": [{"role": "user", "content": "one"}]}
        await client.runs.wait(thread, "lg_chat", input=say, durability="exit")
        first = await client.threads.get_state(thread)
        again = {"messages": [{"role": "user", "content": "two"}]}
        await client.runs.wait(thread, "lg_chat", input=again)
        assert len((await client.threads.get_state(thread))["values"]["messages"]) == 4
        # regenerate from the first answer's checkpoint (what Agent Chat UI does)
        forked = await client.runs.wait(
            thread,
            "lg_chat",
            input={"messages": [{"role": "user", "content": "other"}]},
            checkpoint=first["checkpoint"],
        )
        texts = [m["content"] for m in forked["messages"]]
        assert texts[-2:] == ["other", "echo(other) w0 w1 w2 w3 w4 w5"] and "two" not in texts


async def test_closing_a_stream_cancels_only_when_the_client_asked(store: Store) -> None:
    slow = {"configurable": {"steps": 40, "delay": 0.1}}
    async with serve(store) as srv:
        client = srv.sdk()
        for choice, expected in (("continue", "success"), ("cancel", "interrupted")):
            thread = (await client.threads.create())["thread_id"]
            created: list[Any] = []
            stream = client.runs.stream(
                thread,
                "lg_slow",
                input={},
                config=slow,
                stream_mode="updates",
                on_disconnect=choice,
                on_run_created=created.append,
            )
            async for part in stream:
                if part.event == "updates":
                    break  # the client goes away mid-run
            await stream.aclose()
            run_id = created[0]["run_id"]
            if choice == "continue":
                await client.runs.join(thread, run_id)
            else:
                native = await _native_until_terminal(srv.client, run_id)
                assert native == "cancelled"
            assert (await client.runs.get(thread, run_id))["status"] == expected


async def _native_until_terminal(http: httpx.AsyncClient, run_id: str) -> str:
    return str((await wait_result(http, run_id))["status"])


async def test_a_credential_answered_by_resume_is_never_shown(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        paused = await client.runs.wait(thread, "auth", input={})
        assert "__interrupt__" in paused
        secret = {"token": "s3cr3t-token-value"}
        resumed = await client.runs.create(thread, "auth", command={"resume": secret})
        await client.runs.join(thread, resumed["run_id"])
        listed = await client.runs.list(thread)
        shown = [await client.runs.get(thread, resumed["run_id"]), *listed]
        assert "s3cr3t" not in json.dumps(shown), shown
        # the listing (read once for the thread) says what each run's own lookup says,
        # the interrupted first stretch included
        assert len(listed) == 2
        for run in listed:
            assert (await client.runs.get(thread, run["run_id"]))["status"] == run["status"]
        log = (await srv.client.get(f"/v1/runs/{resumed['outlast_run_id']}/events")).text
        ended = [line for line in log.splitlines() if '"wait.ended"' in line]
        assert ended and all("s3cr3t" not in line for line in ended)


async def test_a_missing_credential_is_given_by_a_resume(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator on LangGraph's clients sees the credential a tool waits for as the
    thread's interrupt (though no checkpoint holds it: the wait is the runtime's own), and
    gives it with ``command.resume`` by that interrupt's id; the tool then has it."""
    from tests.credential_graphs import digest

    monkeypatch.setenv("OUTLAST_TEST_CREDENTIALS_DIR", str(tmp_path))
    settings = make_settings(credential_providers=["tests.credential_graphs:refusing"])
    async with serve(store, settings) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        config: Any = {"configurable": {"pause": 0.1}}
        paused = await client.runs.wait(thread, "long_wait", input={}, config=config)
        (asked,) = paused["__interrupt__"]
        assert asked["value"]["outlast_wait"]["kind"] == "auth"
        assert asked["value"]["outlast_wait"]["object"] == {
            "credential": "api",
            "reason": "the refresh token was revoked",
        }
        shown = await client.threads.get(thread)
        assert shown["status"] == "interrupted"
        assert shown["interrupts"] == {asked["id"]: [{"value": asked["value"], "id": asked["id"]}]}
        state = await client.threads.get_state(thread)
        assert [i["id"] for i in state["interrupts"]] == [asked["id"]]
        resumed = await client.runs.create(
            thread,
            "long_wait",
            command={"resume": {asked["id"]: "tok-from-the-operator"}},
            config=config,
        )
        await client.runs.join(thread, resumed["run_id"])
        state = await client.threads.get_state(thread)
        assert state["values"]["first"] == {
            "token": digest("tok-from-the-operator"),
            "source": "answer",
        }
        assert "tok-from-the-operator" not in json.dumps(await client.runs.list(thread))


async def test_a_join_whose_thread_is_deleted_under_it_ends_with_an_error(store: Store) -> None:
    """The join's body has begun (keepalive newlines) when the thread goes: the answer is
    LangGraph's ``__error__``, never a cut or half-written body."""
    slow = {"configurable": {"steps": 500, "delay": 0.1}}
    async with serve(store, make_settings(langgraph_heartbeat=0.2)) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_slow", input={}, config=slow)
        path = f"/threads/{thread}/runs/{run['run_id']}/join"
        async with (
            httpx.AsyncClient(base_url=srv.url, timeout=60) as http,
            http.stream("GET", path) as response,
        ):
            assert response.status_code == 200
            chunks = response.aiter_bytes()
            assert (await anext(chunks)).strip() == b""  # a keepalive: the body has begun
            await client.threads.delete(thread)
            rest = b"".join([chunk async for chunk in chunks])
        body = json.loads(rest)
        assert body["__error__"]["error"] == "ThreadNotFound", body
