"""LangGraph's thread protocol v2, the event stream (``/threads/{t}/stream/events``, SSE and
WebSocket), read by LangGraph's own client (``client.threads.stream``) and raw: the
channels of real runs, the cursor that resumes exactly, the gap retention leaves."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from outlast.api import thread_walk as walk
from outlast.api.protocol.cursor import Position
from outlast.store import Store
from outlast.store.hub import THREADS
from tests.harness import ALICE, BOB, KEYS, auth, eventually, make_settings, serve
from tests.lg_util import ended, protocol_frames

ALL = ["values", "updates", "messages", "tools", "lifecycle", "input", "custom"]
CHAT = {"messages": [{"role": "user", "content": "hi"}]}


def _root_lifecycle(frames: list[dict[str, Any]]) -> list[str]:
    return [
        f["params"]["data"]["event"] if f["method"] == "lifecycle" else f["method"]
        for f in frames
        if f["method"] in ("lifecycle", "input.requested") and f["params"]["namespace"] == []
    ]


@pytest.mark.parametrize("transport", ["sse", "websocket"])
async def test_the_sdk_follows_a_run_through_its_interrupt(store: Store, transport: str) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        async with client.threads.stream(
            thread, assistant_id="lg_hitl", transport=transport
        ) as stream:
            await client.runs.create(thread, "lg_hitl", input={"topic": "x"})
            snapshots = [snap async for snap in stream.values]  # ends at the interrupt
            assert stream.interrupted and snapshots
            state = await client.threads.get_state(thread)
            asked = state["interrupts"][0]
            assert [(i["interrupt_id"], i["value"]) for i in stream.interrupts] == [
                (asked["id"], {"question": "Approve the plan?", "plan": "plan for x"})
            ]
            await client.runs.create(thread, "lg_hitl", command={"resume": "yes"})
            output = await stream.output.with_timeout(30)
        assert output["done"] == "acted on 'yes'"
        frames = await protocol_frames(srv.client, thread, {"channels": ALL, "since": 0})
        lifecycle = _root_lifecycle(frames)
        assert lifecycle == [
            "started",
            "running",
            "input.requested",
            "interrupted",
            "running",
            "completed",
        ], lifecycle
        seqs = [f["seq"] for f in frames]
        assert seqs == sorted(set(seqs)) and [f["event_id"] for f in frames] == list(map(str, seqs))


async def test_a_models_reply_streams_as_content_blocks(store: Store) -> None:
    settings = make_settings(message_flush_interval=0.01)
    async with serve(store, settings) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        async with client.threads.stream(thread, assistant_id="lg_chat") as stream:
            config = {"configurable": {"words": 8, "delay": 0.03}}
            await client.runs.create(thread, "lg_chat", input=CHAT, config=config)
            streams = [s async for s in stream.messages]
            texts = ["".join([t async for t in s.text]) for s in streams]
        reply = "echo(hi) " + " ".join(f"w{i}" for i in range(8))
        assert texts == [reply]
        body = {"channels": ["messages", "lifecycle"], "since": 0}
        frames = [
            f for f in await protocol_frames(srv.client, thread, body) if f["method"] == "messages"
        ]
        events = [f["params"]["data"]["event"] for f in frames]
        assert events[:2] == ["message-start", "content-block-start"]
        assert events[-2:] == ["content-block-finish", "message-finish"]
        assert set(events[2:-2]) == {"content-block-delta"} and len(events) > 5  # streamed
        deltas = [f["params"]["data"]["delta"]["text"] for f in frames[2:-2]]
        assert "".join(deltas) == reply


async def test_every_cursor_gives_exactly_the_rest_on_both_transports(store: Store) -> None:
    settings = make_settings(message_flush_interval=0.01)
    async with serve(store, settings) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        config = {"configurable": {"words": 6, "delay": 0.02}}
        run = await client.runs.create(thread, "lg_chat", input=CHAT, config=config)
        await client.runs.join(thread, run["run_id"])
        whole = await protocol_frames(srv.client, thread, {"channels": ALL, "since": 0})
        assert ended(whole[-1]) and len(whole) > 10
        inside = [f for f in whole if Position.unpacked(f["seq"]).sub > 0]
        assert inside, "a stored event that became several protocol events"
        for i, frame in enumerate(whole[:-1]):
            rest = await protocol_frames(
                srv.client, thread, {"channels": ALL, "since": frame["seq"]}
            )
            assert rest == whole[i + 1 :], f"from {frame['seq']}"
        middle = whole[len(whole) // 2]
        ws_url = srv.url.replace("http", "ws", 1) + f"/threads/{thread}/stream/events"
        async with connect(ws_url) as socket:
            params = {"channels": ALL, "since": middle["seq"]}
            await socket.send(
                json.dumps({"id": 1, "method": "subscription.subscribe", "params": params})
            )
            answer = json.loads(await socket.recv())
            assert answer["type"] == "success" and answer["id"] == 1
            over_ws: list[dict[str, Any]] = []
            while not over_ws or not ended(over_ws[-1]):
                over_ws.append(json.loads(await socket.recv()))
        assert over_ws == whole[len(whole) // 2 + 1 :]


async def test_a_cursor_older_than_retention_gets_a_gap_then_the_state(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_chat", input=CHAT, stream_mode=["values"])
        await client.runs.join(thread, run["run_id"])
        whole = await protocol_frames(srv.client, thread, {"channels": ALL, "since": 0})
        pos = Position.unpacked(whole[0]["seq"]).pos
        assert await store.prune_events(run["run_id"], 3) == 3
        frames = await protocol_frames(srv.client, thread, {"channels": ALL, "since": 0})
        gap, snapshot, *rest = frames
        first = Position(pos, 4, 0).packed()
        assert gap["type"] == "error" and gap["id"] is None and gap["error"] == "resume_gap"
        assert gap["min_available_seq"] == first and gap["seq"] < first
        state = await client.threads.get_state(thread)
        assert snapshot["method"] == "values" and snapshot["params"]["data"] == state["values"]
        assert rest == [f for f in whole if f["seq"] >= first]
        # the gap's seq moves a client's cursor past the hole: it is not reported again
        again = await protocol_frames(srv.client, thread, {"channels": ALL, "since": gap["seq"]})
        assert again == rest


async def test_namespaces_and_depth_filter_as_the_sdk_matches(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_nested", input={}, stream_subgraphs=True)
        await client.runs.join(thread, run["run_id"])

        async def nodes(**body: Any) -> list[tuple[tuple[str, ...], str]]:
            request = {"channels": ["updates", "lifecycle"], "since": 0, **body}
            frames = await protocol_frames(srv.client, thread, request)
            return [
                (
                    tuple(n.split(":")[0] for n in f["params"]["namespace"]),
                    f["params"]["data"]["node"],
                )
                for f in frames
                if f["method"] == "updates"
            ]

        every = await nodes()
        assert every == [
            ((), "first"),
            (("inner",), "inner_a"),
            (("inner",), "inner_b"),
            ((), "inner"),
            ((), "last"),
        ]
        assert await nodes(namespaces=[[]], depth=0) == [n for n in every if n[0] == ()]
        # the lifecycle that ends the read is at the root: ask for it too
        inner = await nodes(namespaces=[["inner"], []], depth=0)
        assert inner == every


async def test_requests_it_cannot_take_are_refused(store: Store) -> None:
    async with serve(store) as srv:
        thread = (await srv.client.post("/threads", json={})).json()["thread_id"]
        path = f"/threads/{thread}/stream/events"
        missing = await srv.client.post(
            "/threads/nope/stream/events", json={"channels": ["values"]}
        )
        assert missing.status_code == 404
        for body in (
            {"channels": []},
            {"channels": ["valuez"]},
            {"channels": ["values"], "since": -1},
            {"channels": ["values"], "since": 2**53},
            {"channels": ["values"], "depth": "2"},
            {"channels": ["values"], "namespaces": ["a"]},
        ):
            refused = await srv.client.post(path, json=body)
            assert refused.status_code == 422, body
        ws = srv.url.replace("http", "ws", 1)
        with pytest.raises(InvalidStatus) as caught:
            async with connect(f"{ws}/threads/nope/stream/events"):
                pass
        assert caught.value.response.status_code == 403
        async with connect(ws + path) as socket:
            for sent, code in (
                ("not json", "invalid_argument"),
                (json.dumps({"id": 7, "method": "no.such"}), "unknown_command"),
                (
                    json.dumps(
                        {
                            "id": 8,
                            "method": "subscription.unsubscribe",
                            "params": {"subscription_id": "x"},
                        }
                    ),
                    "no_such_subscription",
                ),
                (
                    json.dumps(
                        {"id": 9, "method": "subscription.subscribe", "params": {"channels": []}}
                    ),
                    "invalid_argument",
                ),
            ):
                await socket.send(sent)
                answer = json.loads(await socket.recv())
                assert answer["type"] == "error" and answer["error"] == code, (sent, answer)


async def test_the_stream_is_the_threads_owners_alone(store: Store) -> None:
    async with serve(store, make_settings(api_keys=KEYS)) as srv:
        created = await srv.client.post("/threads", json={}, headers=auth(ALICE))
        path = f"/threads/{created.json()['thread_id']}/stream/events"
        body = {"channels": ["values"]}
        assert (await srv.client.post(path, json=body)).status_code == 401
        assert (await srv.client.post(path, json=body, headers=auth(BOB))).status_code == 404
        ws = srv.url.replace("http", "ws", 1) + path
        for headers in ({}, {"x-api-key": "wrong"}, auth(BOB)):
            with pytest.raises(InvalidStatus):
                async with connect(ws, additional_headers=headers):
                    pass
        async with connect(ws, additional_headers=auth(ALICE)) as socket:
            await socket.send(
                json.dumps({"id": 1, "method": "subscription.subscribe", "params": body})
            )
            assert json.loads(await socket.recv())["type"] == "success"
        alice = httpx.AsyncClient(base_url=srv.url, headers=auth(ALICE), timeout=5)
        async with alice, alice.stream("POST", path, json=body) as response:
            assert response.status_code == 200


async def test_an_idle_thread_stream_is_woken_by_the_run_accepted_on_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acceptance's notice (``THREADS``) wakes a stream waiting on a thread with no
    run: with the safety re-read an hour away, only the notice can bring the run."""
    monkeypatch.setattr(walk, "SAFETY_REREAD", 3600.0)
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        body = {"channels": ["lifecycle"]}
        reading = asyncio.create_task(protocol_frames(srv.client, thread, body))
        # the stream is waiting once its walk watches the thread (a hub waiter)
        await eventually(lambda: store.hub.watcher_count(THREADS, thread) == 1)
        await client.runs.create(thread, "lg_chat", input=CHAT)
        frames = await asyncio.wait_for(reading, 60)
        assert [f["params"]["data"]["event"] for f in frames][-1] == "completed"
