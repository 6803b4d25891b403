"""The thread protocol's commands (``POST /threads/{t}/commands``) on both backends, sent
by LangGraph's own clients where they send them (``client.threads.stream(...)``'s
``run.start`` and ``run.respond``, ``RemoteGraph(version="v3")``) and by hand for the
rest and for the error envelopes.

The commands translate: a run they start is an outlast run (``/v1``) and a LangGraph run
(the v1 face), an answer is the store's exactly-once answer, a state is the face's state.
The thread's event stream is another module; these tests read what the commands did
through the REST faces.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command

from outlast.api.protocol.cursor import thread_head
from outlast.store import Store
from tests.harness import (
    ALICE,
    BOB,
    KEYS,
    Server,
    auth,
    eventually,
    make_settings,
    serve,
    wait_result,
    wait_status,
)


async def command(
    srv: Server, thread_id: str, method: str, params: Any, cid: int = 1, **headers: str
) -> dict[str, Any]:
    response = await srv.client.post(
        f"/threads/{thread_id}/commands",
        json={"id": cid, "method": method, "params": params},
        headers=headers,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["id"] == cid
    return body


def failed(body: dict[str, Any], *codes: str) -> str:
    assert body["type"] == "error" and body["error"] in codes, body
    assert "result" not in body
    return str(body["message"])


async def interrupted(srv: Server, thread_id: str) -> dict[str, Any]:
    """The thread's state once it waits for an answer."""

    async def probe() -> dict[str, Any] | None:
        thread = (await srv.client.get(f"/threads/{thread_id}")).json()
        if thread.get("status") != "interrupted":
            return None
        state: dict[str, Any] = (await srv.client.get(f"/threads/{thread_id}/state")).json()
        return state

    return await eventually(probe, what=f"thread {thread_id} interrupted")


async def started_hitl(srv: Server, topic: str = "t") -> tuple[str, str, str]:
    """A thread whose ``lg_hitl`` run waits at ``ask``: (thread, run, interrupt id)."""
    thread_id = str(uuid.uuid4())
    body = await command(
        srv, thread_id, "run.start", {"assistant_id": "lg_hitl", "input": {"topic": topic}}
    )
    assert body["type"] == "success", body
    state = await interrupted(srv, thread_id)
    return thread_id, body["result"]["run_id"], state["interrupts"][0]["id"]


# -- run.start ---------------------------------------------------------------------------


async def test_run_start_starts_a_durable_run_every_face_sees(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread_id = str(uuid.uuid4())  # minted by the client: run.start makes the thread
        async with client.threads.stream(thread_id, assistant_id="lg_chat") as session:
            result = await session.run.start(
                input={"messages": [{"role": "user", "content": "hi"}]}, metadata={"k": 1}
            )
        run_id = result["run_id"]
        final = await wait_result(srv.client, run_id)  # an outlast run, on /v1
        assert final["status"] == "completed" and final["thread_id"] == thread_id
        lg = await client.runs.get(thread_id, run_id)  # and a LangGraph run, on its face
        assert lg["status"] == "success" and lg["metadata"]["k"] == 1
        state = await client.threads.get_state(thread_id)
        assert state["values"]["messages"][-1]["content"].startswith("echo(hi)")
        run = await store.get_run(run_id)
        assert run is not None and run.options is not None
        # what the thread stream's channels show is kept in the run's log
        assert set(run.options["keep"]) == {"values", "updates", "checkpoints", "tasks"}
        # the answer's cursor was the thread's head before the command acted
        head = await thread_head(store, thread_id)
        again = await command(srv, thread_id, "state.get", {"namespace": []}, cid=2)
        assert again["meta"]["applied_through_seq"] == head > 0


async def test_run_start_on_an_interrupted_thread_resumes_its_run(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, run_id, _ = await started_hitl(srv)
        remote = RemoteGraph("lg_hitl", client=srv.sdk())
        config: Any = {"configurable": {"thread_id": thread_id}}
        async with await remote.astream_events(
            Command(resume="yes"), config=config, version="v3"
        ) as stream:
            stretch = stream._run_id
        final = await wait_result(srv.client, run_id)  # the same outlast run went on
        assert final["status"] == "completed"
        assert final["result"]["done"] == "acted on 'yes'"
        client = srv.sdk()
        runs = await client.runs.list(thread_id)
        assert {r["run_id"] for r in runs} == {run_id, stretch} and stretch != run_id


async def test_run_start_on_a_busy_thread_queues_behind_its_run(store: Store) -> None:
    async with serve(store) as srv:
        thread_id = str(uuid.uuid4())
        slow = {
            "assistant_id": "lg_slow",
            "input": {},
            "config": {"configurable": {"steps": 3, "delay": 0.2}},
        }
        first = await command(srv, thread_id, "run.start", slow)
        second = await command(srv, thread_id, "run.start", slow, cid=2)
        ids = [first["result"]["run_id"], second["result"]["run_id"]]
        finals = [await wait_result(srv.client, i) for i in ids]
        assert [f["status"] for f in finals] == ["completed", "completed"]
        logs = [await store.read_events(i, 0, 1000) for i in ids]
        ended = next(e.time for e in logs[0] if e.type == "run.completed")
        started = next(e.time for e in logs[1] if e.type == "run.started")
        assert ended <= started  # one run of a thread at a time, in order


async def test_a_retried_command_with_its_idempotency_key_acts_once(store: Store) -> None:
    async with serve(store) as srv:
        thread_id = str(uuid.uuid4())
        params = {"assistant_id": "lg_hitl", "input": {"topic": "t"}}
        key: dict[str, str] = {"Idempotency-Key": "start"}
        first, again = [
            await command(srv, thread_id, "run.start", params, i, **key) for i in (1, 2)
        ]
        assert first["result"] == again["result"]
        run_id = first["result"]["run_id"]
        await interrupted(srv, thread_id)
        # a resume by run.start, retried once the run has gone on: the same answer again,
        # not a new run with the resume value as its input
        resume = {"assistant_id": "lg_hitl", "input": {"x": 1}}
        key = {"Idempotency-Key": "resume"}
        answered = [await command(srv, thread_id, "run.start", resume, i, **key) for i in (3, 4)]
        assert answered[0]["result"] == answered[1]["result"] != first["result"]
        final = await wait_result(srv.client, run_id)
        assert final["result"]["answer"] == {"x": 1}
        other = {**resume, "input": {"x": 2}}
        failed(await command(srv, thread_id, "run.start", other, 5, **key), "invalid_argument")
        listed = (await srv.client.get("/v1/runs", params={"thread_id": thread_id})).json()
        assert [r["id"] for r in listed["runs"]] == [run_id]
        assert (await store.get_run(run_id)).last_seq == final["last_seq"]  # type: ignore[union-attr]


# -- input.respond -----------------------------------------------------------------------


async def test_of_concurrent_answers_to_one_interrupt_exactly_one_resumes(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, run_id, interrupt_id = await started_hitl(srv)
        client = srv.sdk()
        async with client.threads.stream(thread_id, assistant_id="lg_hitl") as session:
            # what the session learns from the stream's input.requested (another module)
            session.interrupts.append(
                {"interrupt_id": interrupt_id, "value": None, "namespace": []}
            )
            answers = [
                session.run.respond(f"answer {i}", interrupt_id=interrupt_id) for i in range(2)
            ]
            answers += [
                command(srv, thread_id, "input.respond", _respond(interrupt_id, f"answer {i}"), i)
                for i in range(2, 6)
            ]
            results = await asyncio.gather(*answers, return_exceptions=True)
        won = [i for i, r in enumerate(results) if r == {} or _succeeded(r)]
        assert len(won) == 1, results
        for r in results:
            if isinstance(r, RuntimeError):
                assert "no_such_interrupt" in str(r) or "no_such_run" in str(r)
            elif not _succeeded(r) and r != {}:
                failed(r, "no_such_interrupt", "no_such_run")  # type: ignore[arg-type]
        final = await wait_result(srv.client, run_id)
        assert final["result"]["answer"] == f"answer {won[0]}"
        ended = [e for e in await store.read_events(run_id, 0, 1000) if e.type == "wait.ended"]
        assert len(ended) == 1


def _respond(interrupt_id: str, response: Any, **more: Any) -> dict[str, Any]:
    return {"namespace": [], "interrupt_id": interrupt_id, "response": response, **more}


def _succeeded(r: object) -> bool:
    return isinstance(r, dict) and r.get("type") == "success"


async def test_update_and_goto_are_applied_with_the_resume_in_one_step(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, run_id, interrupt_id = await started_hitl(srv, topic="before")
        before = (await srv.client.get(f"/threads/{thread_id}/state")).json()
        params = _respond(interrupt_id, "yes", update={"topic": "after"}, goto="think")
        assert (await command(srv, thread_id, "input.respond", params))["result"] == {}
        await interrupted(srv, thread_id)  # goto think: it asks again
        history = (
            await srv.client.post(f"/threads/{thread_id}/history", json={"limit": 20})
        ).json()
        ids = [h["checkpoint_id"] for h in history]
        resumed = history[ids.index(before["checkpoint_id"]) - 1]
        # the step right after the pause ran ask (the answer) and think (the jump), think
        # reading the update: one checkpoint, no update of its own before it
        assert resumed["parent_checkpoint_id"] == before["checkpoint_id"]
        assert resumed["metadata"]["source"] == "loop"
        values = resumed["values"]
        assert (values["topic"], values["answer"], values["plan"]) == (
            "after",
            "yes",
            "plan for after",
        )
        assert sorted(resumed["next"]) == ["act", "ask"]
        snap = await wait_status(srv.client, run_id, "waiting")  # the same run asks again
        assert snap["waits"][0]["kind"] == "human"


async def test_a_langgraph_resume_applies_its_update_too(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, run_id, _ = await started_hitl(srv, topic="before")
        client = srv.sdk()
        await client.runs.wait(
            thread_id, "lg_hitl", command={"resume": "ok", "update": {"topic": "after"}}
        )
        final = await wait_result(srv.client, run_id)
        assert final["result"]["topic"] == "after" and final["result"]["answer"] == "ok"


# -- state -------------------------------------------------------------------------------


async def test_state_get_and_list_checkpoints_read_the_thread(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, _, _ = await started_hitl(srv, topic="x")
        rest = (await srv.client.get(f"/threads/{thread_id}/state")).json()
        got = (await command(srv, thread_id, "state.get", {"namespace": []}))["result"]
        assert got == {
            "values": rest["values"],
            "checkpoint": {"id": rest["checkpoint_id"], "ns": ""},
        }
        keys = {"namespace": [], "keys": ["plan", "missing"]}
        assert (await command(srv, thread_id, "state.get", keys))["result"]["values"] == {
            "plan": "plan for x"
        }
        history = (
            await srv.client.post(f"/threads/{thread_id}/history", json={"limit": 50})
        ).json()
        listed = (await command(srv, thread_id, "state.listCheckpoints", {}))["result"]
        assert [c["id"] for c in listed["checkpoints"]] == [h["checkpoint_id"] for h in history]
        newest = listed["checkpoints"][0]
        assert newest["step"] == history[0]["metadata"]["step"] and newest["node_name"] == "think"
        assert newest["timestamp"] == history[0]["created_at"]
        page = {"limit": 1, "before": newest["id"]}
        older = (await command(srv, thread_id, "state.listCheckpoints", page))["result"]
        assert [c["id"] for c in older["checkpoints"]] == [history[1]["checkpoint_id"]]
        nothing = str(uuid.uuid4())  # a thread no run.start has made yet
        assert (await command(srv, nothing, "state.get", {"namespace": []}))["result"] == {
            "values": {}
        }


async def test_state_fork_runs_from_an_earlier_checkpoint_of_the_thread(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, run_id, interrupt_id = await started_hitl(srv, topic="x")
        await command(srv, thread_id, "input.respond", _respond(interrupt_id, "first"))
        await wait_result(srv.client, run_id)
        history = (
            await srv.client.post(f"/threads/{thread_id}/history", json={"limit": 50})
        ).json()
        at_ask = next(h for h in history if h["next"] == ["ask"])  # before the question
        body = await command(
            srv, thread_id, "state.fork", {"checkpoint_id": at_ask["checkpoint_id"]}
        )
        assert body["result"]["thread_id"] == thread_id
        fork = body["result"]["run_id"]
        await wait_status(srv.client, fork, "waiting")  # it asks again, from there
        state = (await srv.client.get(f"/threads/{thread_id}/state")).json()
        assert state["parent_checkpoint_id"] == at_ask["checkpoint_id"]
        assert "answer" not in state["values"] and state["next"] == ["ask"]
        missing = await command(srv, thread_id, "state.fork", {"checkpoint_id": "nope"}, cid=2)
        failed(missing, "no_such_checkpoint")


async def test_agent_get_tree_shows_the_run_and_its_subgraphs(store: Store) -> None:
    async with serve(store) as srv:
        thread_id = str(uuid.uuid4())
        started = await command(
            srv, thread_id, "run.start", {"assistant_id": "lg_nested", "input": {}}
        )
        await wait_result(srv.client, started["result"]["run_id"])
        tree = (await command(srv, thread_id, "agent.getTree", {}, cid=2))["result"]["tree"]
        assert (tree["namespace"], tree["status"], tree["graph_name"]) == (
            [],
            "completed",
            "lg_nested",
        )
        (inner,) = tree["children"]
        assert inner["graph_name"] == "inner" and inner["status"] == "completed"
        assert inner["namespace"][0].startswith("inner:")
        # the namespace is the one state.get reads a subgraph's state at
        at_inner = {"namespace": inner["namespace"]}
        sub = (await command(srv, thread_id, "state.get", at_inner, cid=4))["result"]
        assert sub["values"] == {"trail": ["first", "inner_a", "inner_b"]}
        assert sub["checkpoint"]["ns"] == inner["namespace"][0]
        named = {"run_id": started["result"]["run_id"]}
        assert (await command(srv, thread_id, "agent.getTree", named, cid=3))["result"][
            "tree"
        ] == tree
        failed(
            await command(srv, thread_id, "agent.getTree", {"run_id": str(uuid.uuid4())}),
            "no_such_run",
        )


# -- refusals: the spec's error envelopes, and nothing changed ---------------------------


async def _footprint(srv: Server, store: Store, thread_id: str) -> tuple[Any, ...]:
    """What a refused command must leave as it was: the thread, its runs, their logs."""
    thread = (await srv.client.get(f"/threads/{thread_id}")).json()
    listed = (await srv.client.get("/v1/runs", params={"thread_id": thread_id})).json()["runs"]
    return (
        thread["status"],
        thread["values"],
        [(r["id"], r["status"], r["last_seq"]) for r in listed],
        await thread_head(store, thread_id),
    )


async def test_refused_commands_answer_the_spec_errors_and_change_nothing(store: Store) -> None:
    async with serve(store) as srv:
        thread_id, _, interrupt_id = await started_hitl(srv)
        before = await _footprint(srv, store, thread_id)
        url = f"/threads/{thread_id}/commands"
        for raw, cid in (
            (b"{not json", None),
            (b"[1]", None),
            (b'{"method": "state.get"}', None),
            (b'{"id": -1, "method": "state.get"}', None),
            (b'{"id": 3}', 3),
            (b'{"id": 4, "method": "state.get", "params": [1]}', 4),
        ):
            response = await srv.client.post(url, content=raw)
            assert response.status_code == 400, raw
            assert response.json()["id"] == cid and response.json()["error"] == "invalid_argument"
        bad_key = await srv.client.post(
            url,
            json={"id": 1, "method": "run.start", "params": {}},
            headers={"Idempotency-Key": "a b"},
        )
        assert bad_key.status_code == 400 and bad_key.json()["error"] == "invalid_argument"
        failed(await command(srv, thread_id, "run.stop", {}), "unknown_command")
        failed(
            await command(srv, thread_id, "subscription.subscribe", {"channels": ["values"]}),
            "not_supported",
        )
        assert "params.assistant_id" in failed(
            await command(srv, thread_id, "run.start", {"input": {}}), "invalid_argument"
        )
        assert "params.limit" in failed(
            await command(srv, thread_id, "state.listCheckpoints", {"limit": "x"}),
            "invalid_argument",
        )
        assert "interrupt_id" in failed(
            await command(srv, thread_id, "input.respond", {"namespace": []}), "invalid_argument"
        )
        failed(
            await command(srv, thread_id, "input.respond", _respond("f" * 32, "x")),
            "no_such_interrupt",
        )
        # an id that does not look like LangGraph's is still an id, not a value for
        # the one interrupt pending
        assert "not pending" in failed(
            await command(srv, thread_id, "input.respond", _respond("not-an-id", "x")),
            "no_such_interrupt",
        )
        failed(
            await command(
                srv,
                thread_id,
                "input.inject",
                {"namespace": [], "message": {"role": "user", "content": "hi"}},
            ),
            "not_supported",
        )
        nowhere = {"namespace": ["nowhere:1"]}
        failed(await command(srv, thread_id, "state.get", nowhere), "no_such_namespace")
        unknown = {"assistant_id": "nope", "input": {}}
        failed(await command(srv, str(uuid.uuid4()), "run.start", unknown), "invalid_argument")
        assert await _footprint(srv, store, thread_id) == before
        # a resume of nothing: the run was answered (exactly once), nothing waits any more
        await command(srv, thread_id, "input.respond", _respond(interrupt_id, "yes"))
        again = await command(srv, thread_id, "input.respond", _respond(interrupt_id, "again"))
        failed(again, "no_such_run", "no_such_interrupt")
        elsewhere = str(uuid.uuid4())
        failed(
            await command(srv, elsewhere, "input.respond", _respond(interrupt_id, "x")),
            "no_such_run",
        )
        assert (await srv.client.get(f"/threads/{elsewhere}")).status_code == 404


async def test_dispatch_answers_any_frame_with_an_envelope(store: Store) -> None:
    from outlast.api.protocol.commands import dispatch

    async with serve(store) as srv:
        ctx = srv.app.state.ctx
        for frame in (
            None,
            "text",
            [],
            {"id": True, "method": "state.get"},
            {"id": 2**53, "method": "x"},
        ):
            assert (await dispatch(ctx, "t", frame))["type"] == "error"
        answered = await dispatch(
            ctx, "t", {"id": 7, "method": "state.get", "params": {"namespace": []}}
        )
        assert answered == {
            "type": "success",
            "id": 7,
            "result": {"values": {}},
            "meta": {"applied_through_seq": 0},
        }
        assert (await dispatch(ctx, "bad id!", {"id": 1, "method": "state.get"}))[
            "error"
        ] == "invalid_argument"


async def test_another_principals_thread_is_none_of_its_business(store: Store) -> None:
    async with serve(store, make_settings(api_keys=KEYS)) as srv:
        alice, bob = auth(ALICE), auth(BOB)
        thread_id = str(uuid.uuid4())
        start = {"assistant_id": "lg_hitl", "input": {"topic": "secret"}}
        await command(srv, thread_id, "run.start", start, **alice)

        async def asks() -> str | None:
            thread = (await srv.client.get(f"/threads/{thread_id}", headers=alice)).json()
            asked = [i for v in (thread.get("interrupts") or {}).values() for i in v]
            return str(asked[0]["id"]) if asked else None

        interrupt_id = await eventually(asks, what="alice's thread asking")
        state = await command(srv, thread_id, "state.get", {"namespace": []}, **alice)
        seen = await command(srv, thread_id, "state.get", {"namespace": []}, **bob)
        assert seen["result"] == {"values": {}} and seen["meta"]["applied_through_seq"] == 0
        listed = await command(srv, thread_id, "state.listCheckpoints", {}, **bob)
        assert listed["result"] == {"checkpoints": []}
        failed(
            await command(srv, thread_id, "input.respond", _respond(interrupt_id, "y"), **bob),
            "no_such_run",
        )
        failed(await command(srv, thread_id, "run.start", start, **bob), "invalid_argument")
        failed(await command(srv, thread_id, "agent.getTree", {}, **bob), "no_such_run")
        after = await command(srv, thread_id, "state.get", {"namespace": []}, **alice)
        assert after["result"] == state["result"]
