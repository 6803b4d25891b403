"""Streams of the LangGraph face beyond one run's happy path: the thread's stream across
its runs, the heartbeat, a cursor older than retention, and a rejoin of a finished run."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from typing import Any

from outlast.store import Store
from tests.harness import collect, eventually, make_settings, serve


async def test_the_thread_stream_follows_every_run_and_resumes_by_id(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        seen: list[Any] = []

        async def follow() -> None:
            async for part in await client.threads.join_stream(
                thread, last_event_id="-", stream_mode=["run_modes", "lifecycle"]
            ):
                seen.append(part)
                if (
                    sum(p.data.get("status") == "run_done" for p in seen if p.event == "metadata")
                    == 2
                ):
                    return

        task = asyncio.create_task(follow())
        first = await client.runs.create(
            thread, "lg_hitl", input={"topic": "a"}, stream_mode=["values", "updates"]
        )
        await client.runs.join(thread, first["run_id"])
        await client.runs.wait(thread, "lg_hitl", command={"resume": "ok"})
        await client.runs.wait(
            thread, "lg_chat", input={"messages": [{"role": "user", "content": "x"}]}
        )
        await asyncio.wait_for(task, 30)
        ids = [tuple(map(int, p.id.split("-"))) for p in seen]
        assert ids == sorted(set(ids)), "strictly increasing, <run>-<seq>"
        names = [p.event for p in seen]
        assert names[0] == "metadata" and "values" in names and "end" not in names
        done = [
            p.data["run_id"]
            for p in seen
            if p.data and p.event == "metadata" and "status" in p.data
        ]
        assert len(done) == 2 and done[0] != done[1]
        # back from the middle: exactly the rest
        middle = seen[len(seen) // 2]
        rest: list[Any] = []
        async for part in await client.threads.join_stream(
            thread, last_event_id=middle.id, stream_mode=["run_modes", "lifecycle"]
        ):
            rest.append(part)
            if len(rest) == len(seen) - len(seen) // 2 - 1:
                break
        assert [(p.event, p.id) for p in rest] == [
            (p.event, p.id) for p in seen[len(seen) // 2 + 1 :]
        ]


async def test_heartbeats_on_a_quiet_stream(store: Store) -> None:
    settings = make_settings(langgraph_heartbeat=0.2)
    async with serve(store, settings) as srv:
        thread = (await srv.client.post("/threads", json={})).json()["thread_id"]
        body = {
            "assistant_id": "lg_slow",
            "input": {},
            "config": {"configurable": {"steps": 2, "delay": 0.7}},
        }
        async with srv.client.stream("POST", f"/threads/{thread}/runs/stream", json=body) as r:
            text = "".join([chunk async for chunk in r.aiter_text()])
        assert ": heartbeat" in text
        waited = await srv.client.post("/runs/wait", json=body)
        assert waited.text.startswith("\n") and waited.json()["done"] == [0, 1]


async def test_a_cursor_older_than_retention_is_told_then_the_current_values(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            thread, "lg_chat", input={"messages": []}, stream_mode=["values"]
        )
        await client.runs.join(thread, run["run_id"])
        await store.prune_events(run["run_id"], 4)
        parts = [p async for p in client.runs.join_stream(thread, run["run_id"], last_event_id="2")]
        # a reconnect from the middle (no metadata again): the gap, the state now, the rest
        assert [p.event for p in parts][:2] == ["gap", "values"]
        assert parts[0].data["oldest_available"] == 5 and parts[0].id == "4"
        assert parts[1].data["messages"][-1]["content"].startswith("echo(")
        assert parts[-1].event == "end"
        assert [int(p.id) for p in parts[2:]] == sorted(int(p.id) for p in parts[2:])
        assert all(int(p.id) >= 5 for p in parts[2:])


async def test_rejoining_a_finished_run_replays_then_ends(store: Store) -> None:
    """aegra#472: a finished run with ``Last-Event-ID: -1`` must end, not wait forever;
    past its last event, only ``end``."""
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        done = await client.runs.create(thread, "lg_chat", input={"messages": []})
        await client.runs.join(thread, done["run_id"])
        all_parts = [
            p async for p in client.runs.join_stream(thread, done["run_id"], last_event_id="-1")
        ]
        assert all_parts[-1].event == "end"
        last = all_parts[-1].id
        after = await asyncio.wait_for(
            _collect(client.runs.join_stream(thread, done["run_id"], last_event_id=last)), 10
        )
        assert [p.event for p in after] == ["end"]
        raw = await srv.client.get(
            f"/threads/{thread}/runs/{done['run_id']}/stream", headers={"Last-Event-ID": "x1"}
        )
        assert raw.status_code == 422 and "Last-Event-ID" in raw.json()["detail"]


async def _collect(stream: Any) -> list[Any]:
    return [p async for p in stream]


async def test_join_stream_modes_filter_and_every_encoding_works(store: Store) -> None:
    async with serve(store) as srv:
        thread = (await srv.client.post("/threads", json={})).json()["thread_id"]
        body = {
            "assistant_id": "lg_hitl",
            "input": {"topic": "m"},
            "stream_mode": ["values", "updates"],
        }
        run = (await srv.client.post(f"/threads/{thread}/runs", json=body)).json()
        await srv.client.get(f"/threads/{thread}/runs/{run['run_id']}/join")
        path = f"/threads/{thread}/runs/{run['run_id']}/stream"
        for params in (
            [("stream_mode", "updates")],
            [("stream_mode", '["updates"]')],
            [("stream_mode", "updates,custom")],
        ):
            text = (await srv.client.get(path, params=params, headers={"Last-Event-ID": "-1"})).text
            assert "event: updates" in text and "event: values" not in text, params
        both = (
            await srv.client.get(
                path,
                params=[("stream_mode", "updates"), ("stream_mode", "values")],
                headers={"Last-Event-ID": "-1"},
            )
        ).text
        assert "event: updates" in both and "event: values" in both


async def test_after_seconds_delays_the_start_without_holding_a_worker(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_chat", input={"messages": []}, after_seconds=1)
        assert run["status"] == "pending"
        done = await client.runs.join(thread, run["run_id"])
        assert done["messages"][-1]["content"].startswith("echo(")
        events = [e.data for e in await collect(srv.client, run["run_id"])]
        timer = next(e for e in events if e["type"] == "wait.started")["data"]["wait"]
        assert timer["kind"] == "timer"
        started = [e for e in events if e["type"] == "run.started"]
        assert len(started) == 2  # claimed, parked on the timer, claimed again when due
        deadline = dt.datetime.fromisoformat(timer["deadline"])
        assert dt.datetime.fromisoformat(started[1]["time"]) >= deadline
        created = dt.datetime.fromisoformat(events[0]["time"])
        assert deadline - created >= dt.timedelta(seconds=0.9)


async def test_the_legacy_messages_mode_sends_the_message_so_far(store: Store) -> None:
    settings = make_settings(message_flush_interval=0.05)
    async with serve(store, settings) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        created: list[Any] = []
        live = [
            p
            async for p in client.runs.stream(
                thread,
                "lg_chat",
                input={"messages": [{"role": "user", "content": "hi"}]},
                config={"configurable": {"delay": 0.03, "words": 12}},
                stream_mode="messages",
                on_run_created=created.append,
            )
        ]
        partial = [p for p in live if p.event == "messages/partial"]
        assert [p.event for p in live].count("messages/metadata") == 1
        assert len(partial) >= 2, "the reply arrived in several chunks"
        texts = [p.data[0]["content"] for p in partial]
        assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
        assert texts[-1] == "echo(hi) " + " ".join(f"w{i}" for i in range(12))
        # a rejoin after the first chunk goes on from what had been said
        run_id = created[0]["run_id"]
        rest = [
            p
            async for p in client.runs.join_stream(
                thread, run_id, last_event_id=partial[0].id, stream_mode="messages"
            )
        ]
        again = [p.data[0]["content"] for p in rest if p.event == "messages/partial"]
        assert again and all(b.startswith(a) for a, b in itertools.pairwise([texts[0], *again]))
        assert len(again[0]) > len(texts[0]) and again[-1] == texts[-1]


async def test_the_events_mode_is_langchains_astream_events(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        created: list[Any] = []
        live = [
            p
            async for p in client.runs.stream(
                None,
                "lg_chat",
                input={"messages": [{"role": "user", "content": "hi"}]},
                stream_mode="events",
                on_run_created=created.append,
            )
        ]
        kinds = [p.data["event"] for p in live if p.event == "events"]
        assert "on_chain_start" in kinds and "on_chain_end" in kinds
        assert "on_chat_model_stream" in kinds
        tokens = "".join(
            str(p.data["data"]["chunk"]["content"])
            for p in live
            if p.event == "events" and p.data["event"] == "on_chat_model_stream"
        )
        assert tokens == "echo(hi) w0 w1 w2 w3 w4 w5"
        again = [
            p
            async for p in client.runs.join_stream(
                created[0]["thread_id"], created[0]["run_id"], last_event_id="-1"
            )
        ]
        assert [(p.event, p.id, p.data) for p in again] == [(p.event, p.id, p.data) for p in live]


async def test_a_stateless_runs_thread_is_deleted_after_it_ends_unless_kept(store: Store) -> None:
    settings = make_settings(temporary_thread_ttl=0, retention_interval=0.2)
    async with serve(store, settings) as srv:
        client = srv.sdk()
        gone = await client.runs.create(None, "lg_chat", input={"messages": []})
        kept = await client.runs.create(
            None, "lg_chat", input={"messages": []}, on_completion="keep"
        )
        # Not joined: with a TTL of 0 its thread (and run) may be gone before a join
        # arrives, which a slow machine makes likely; its deletion is the check below.
        await client.runs.join(kept["thread_id"], kept["run_id"])

        async def deleted() -> bool:
            return (await srv.client.get(f"/threads/{gone['thread_id']}")).status_code == 404

        await eventually(deleted, what="the temporary thread deleted")
        assert (await srv.client.get(f"/v1/runs/{gone['run_id']}")).status_code == 404
        assert (await client.threads.get(kept["thread_id"]))["status"] == "idle"
        assert (await client.threads.get_state(kept["thread_id"]))["values"]["messages"]
