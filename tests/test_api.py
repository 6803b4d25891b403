"""The HTTP API end to end, on both backends, over a real socket."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from outlast.store import Store
from tests.harness import collect, make_settings, post_run, serve, wait_result

MESSAGES = {"messages": [{"role": "user", "content": "hello"}]}


def _seqs(events: list) -> list[int]:  # type: ignore[type-arg]
    return [int(e.id) for e in events if e.id is not None]


async def test_lifecycle_accept_stream_complete(store: Store) -> None:
    # through the queue: tests/test_eager.py has the run that starts as it is accepted
    async with serve(store, make_settings(eager_start=False)) as srv:
        response = await srv.client.post("/v1/runs", json={"input": MESSAGES})
        assert response.status_code == 202
        run = response.json()
        assert response.headers["location"] == f"/v1/runs/{run['id']}"
        assert response.headers["content-location"] == f"/v1/runs/{run['id']}"
        assert response.headers["retry-after"] == "1"
        assert run["status"] == "queued" and run["graph"] == "steps" and run["last_seq"] == 1

        events = await collect(srv.client, run["id"])
        types = [e.event for e in events]
        assert types[0] == "run.created" and types[1] == "run.started"
        assert types[-1] == "run.completed"
        assert types.count("node.updated") == 5 and types.count("custom") == 5
        assert _seqs(events) == list(range(1, len(events) + 1))
        for e in events:
            assert {"seq", "type", "time"} <= set(e.data) and e.data["type"] == e.event

        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["attempts"] == 1
        assert final["result"]["steps"] == ["plan", "gather", "draft", "review", "finish"]
        assert final["result"]["messages"][-1]["content"].startswith("Worked on 'hello'")
        assert final["last_seq"] == len(events)


async def test_result_endpoint_waits_then_answers_202(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="slow", config={"configurable": {"sleep": 30}})
        response = await srv.client.get(f"/v1/runs/{run['id']}/result", params={"wait": 0.3})
        assert response.status_code == 202
        assert response.json()["status"] in ("queued", "running")
        assert response.headers["location"] == f"/v1/runs/{run['id']}"
        await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        done = await wait_result(srv.client, run["id"])
        assert done["status"] == "cancelled"


async def test_listing_newest_first_filters_and_pages(store: Store) -> None:
    async with serve(store) as srv:
        ids = [
            (await post_run(srv.client, input=MESSAGES, thread_id="thread-a"))["id"]
            for _ in range(3)
        ]
        other = await post_run(srv.client, input=MESSAGES, thread_id="thread-b")
        for run_id in [*ids, other["id"]]:
            await wait_result(srv.client, run_id)
        page = (
            await srv.client.get("/v1/runs", params={"thread_id": "thread-a", "limit": 2})
        ).json()
        assert [r["id"] for r in page["runs"]] == ids[::-1][:2]
        assert page["next_cursor"]
        page2 = (
            await srv.client.get(
                "/v1/runs",
                params={"thread_id": "thread-a", "limit": 2, "cursor": page["next_cursor"]},
            )
        ).json()
        assert [r["id"] for r in page2["runs"]] == ids[:1] and page2["next_cursor"] is None
        done = (await srv.client.get("/v1/runs", params={"status": "completed"})).json()
        assert {r["id"] for r in done["runs"]} == {*ids, other["id"]}
        queued = (await srv.client.get("/v1/runs", params={"status": "queued"})).json()
        assert queued["runs"] == []


async def test_fifty_concurrent_posts_with_one_key_make_one_run(store: Store) -> None:
    async with serve(store) as srv:
        body = {"input": MESSAGES, "metadata": {"try": 1}}

        async def post() -> httpx.Response:
            return await srv.client.post(
                "/v1/runs", json=body, headers={"Idempotency-Key": "order-42"}
            )

        responses = await asyncio.gather(*(post() for _ in range(50)))
        assert {r.status_code for r in responses} == {202}
        ids = {r.json()["id"] for r in responses}
        assert len(ids) == 1
        replayed = [r for r in responses if r.headers.get("idempotent-replayed") == "true"]
        assert len(replayed) == 49
        listing = (await srv.client.get("/v1/runs")).json()
        assert [r["id"] for r in listing["runs"]] == list(ids)
        # same key, another body: refused, nothing written
        other = await srv.client.post(
            "/v1/runs",
            json={**body, "metadata": {"try": 2}},
            headers={"Idempotency-Key": "order-42"},
        )
        assert other.status_code == 422
        assert other.headers["content-type"] == "application/problem+json"
        assert "order-42" in other.json()["detail"]
        assert len((await srv.client.get("/v1/runs")).json()["runs"]) == 1
        run_id = ids.pop()
        assert (await wait_result(srv.client, run_id))["status"] == "completed"


async def test_cancel_queued_run(store: Store) -> None:
    async with serve(store, with_worker=False) as srv:
        run = await post_run(srv.client, input=MESSAGES)
        first = await srv.client.post(
            f"/v1/runs/{run['id']}/cancel", json={"reason": "changed my mind"}
        )
        assert first.status_code == 202 and first.json()["status"] == "cancelled"
        second = await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        assert second.status_code == 202 and second.json()["status"] == "cancelled"
        assert second.json()["last_seq"] == first.json()["last_seq"]  # nothing new happened
        events = await collect(srv.client, run["id"])
        assert [e.event for e in events] == ["run.created", "run.cancelled"]
        assert events[-1].data["data"]["reason"] == "changed my mind"
    # a worker started later runs a newer run and never picks up the cancelled one
    async with serve(store) as srv:
        later = await post_run(srv.client, input=MESSAGES)
        assert (await wait_result(srv.client, later["id"]))["status"] == "completed"
        snap = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
        assert snap["status"] == "cancelled" and snap["attempts"] == 0


async def test_cancel_running_run_cancels_node_in_flight_and_is_idempotent(
    store: Store, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="slow", config={"configurable": {"sleep": 60, "marker": str(marker)}}
        )
        async with srv.client.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            from tests.harness import sse_events

            seen: list[str] = []
            async for event in sse_events(response):
                seen.append(event.event)
                if event.event == "run.started":
                    break
        for _ in range(200):
            if marker.exists():
                break
            await asyncio.sleep(0.02)
        assert marker.read_text() == "in node"
        responses = await asyncio.gather(
            *(srv.client.post(f"/v1/runs/{run['id']}/cancel") for _ in range(2))
        )
        assert all(r.status_code == 202 for r in responses)
        assert {r.json()["status"] for r in responses} <= {"cancelling", "cancelled"}
        final = await wait_result(srv.client, run["id"], timeout=10)
        assert final["status"] == "cancelled"
        assert final["error"]["type"] == "cancelled"
        assert marker.read_text() == "cancelled in node"
        events = await collect(srv.client, run["id"])
        types = [e.event for e in events]
        assert types.count("run.cancelling") == 1 and types[-1] == "run.cancelled"
        assert "run.completed" not in types and "node.updated" not in types
        third = await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        assert third.status_code == 202 and third.json()["status"] == "cancelled"


async def test_failed_run_carries_the_error(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="boom")
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        assert final["error"]["type"] == "ValueError"
        assert final["error"]["message"] == "the tool exploded"
        assert "traceback" not in final["error"]
        events = await collect(srv.client, run["id"])
        assert events[-1].event == "run.failed"


async def test_model_tokens_are_coalesced(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="chatty", config={"configurable": {"words": 400}})
        final = await wait_result(srv.client, run["id"])
        events = await collect(srv.client, run["id"])
        deltas = [e.data["data"] for e in events if e.event == "message.delta"]
        text = "".join(d["content"] for d in deltas)
        assert text == final["result"]["reply"]
        chunks = sum(d["chunks"] for d in deltas)
        assert chunks >= 400  # one chunk per token (and spaces) ...
        assert len(deltas) < chunks / 4  # ... but far fewer events


async def test_stream_resumes_from_cursor_and_header_wins(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, input=MESSAGES)
        await wait_result(srv.client, run["id"])
        full = await collect(srv.client, run["id"])
        tail = await collect(srv.client, run["id"], after=5)
        assert _seqs(tail) == _seqs(full)[5:]
        header = await collect(srv.client, run["id"], after=2, last_event_id="7")
        assert _seqs(header) == _seqs(full)[7:]
        # a client already past the terminal event gets an empty, finished stream
        assert await collect(srv.client, run["id"], after=len(full)) == []


async def test_gap_after_pruning_is_announced_with_a_snapshot(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(srv.client, input=MESSAGES)
        await wait_result(srv.client, run["id"])
        full = await collect(srv.client, run["id"])
        await store.prune_events(run["id"], 6)
        events = await collect(srv.client, run["id"], after=2)
        assert events[0].event == "gap" and events[0].id == "6"
        assert events[0].data["seq"] == 6 and events[0].data["type"] == "gap"
        assert events[0].data["data"]["requested_after"] == 2
        assert events[0].data["data"]["oldest_available"] == 7
        assert events[1].event == "snapshot" and events[1].id is None
        assert events[1].data["seq"] is None and events[1].data["data"]["status"] == "completed"
        assert _seqs(events[2:]) == _seqs(full)[6:]
        # a cursor inside the retained part sees no gap
        assert _seqs(await collect(srv.client, run["id"], after=8)) == _seqs(full)[8:]


async def test_closing_a_stream_never_cancels_the_run(store: Store, tmp_path: Path) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client, input=MESSAGES, config={"configurable": {"step_delay": 0.05}}
        )
        async with srv.client.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    break  # hang up after the first event
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed"


async def test_health_and_docs(store: Store) -> None:
    async with serve(store) as srv:
        assert (await srv.client.get("/healthz")).json() == {"status": "ok"}
        ready = (await srv.client.get("/readyz")).json()
        assert ready["status"] == "ready" and ready["backend"] == store.backend
        assert (await srv.client.get("/docs")).status_code == 200
        schema = (await srv.client.get("/openapi.json")).json()
        assert "/v1/runs/{run_id}/events" in schema["paths"]


async def _raw_chunked_post(url: str, size: int) -> tuple[int, dict[str, str], bytes]:
    """POST a body without Content-Length (chunked), so only the streaming check sees it.

    A raw socket, because the server answers 413 and closes while the body is still
    arriving, and httpx then reports the reset instead of the answer."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = b'{"input": {"x": "' + b"a" * size + b'"}}'
    writer.write(
        b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    writer.write(f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    payload = await reader.readexactly(int(headers["content-length"]))
    writer.close()
    return status, headers, payload


async def _count_runs(store: Store) -> int:
    return len(await store.list_runs(thread_id=None, status=None, limit=1000, before=None))


async def test_bad_input_is_a_problem_and_writes_nothing(store: Store) -> None:
    async with serve(store) as srv:
        c = srv.client
        cases: list[tuple[httpx.Response, int]] = [
            (await c.get("/v1/runs/00000000-0000-0000-0000-000000000000"), 404),
            (await c.get("/v1/runs/not-a-uuid"), 404),
            (await c.get("/v1/runs/00000000-0000-0000-0000-000000000000/events"), 404),
            (await c.post("/v1/runs/00000000-0000-0000-0000-000000000000/cancel"), 404),
            (await c.get("/v1/runs/00000000-0000-0000-0000-000000000000/result"), 404),
            (
                await c.post(
                    "/v1/runs", content=b"{not json", headers={"content-type": "application/json"}
                ),
                400,
            ),
            (await c.post("/v1/runs", json={"input": "not an object"}), 422),
            (await c.post("/v1/runs", json={"graph": "nope", "input": {}}), 422),
            (await c.post("/v1/runs", json={"input": {}, "surprise": 1}), 422),
            (await c.post("/v1/runs", json={"input": {}, "config": {"callbacks": 1}}), 422),
            (await c.post("/v1/runs", json={"input": {}, "thread_id": "bad id with spaces"}), 422),
            (
                await c.post(
                    "/v1/runs", json={"input": {}, "config": {"configurable": {"thread_id": "x"}}}
                ),
                422,
            ),
            (
                await c.post(
                    "/v1/runs", json={"input": {}}, headers={"Idempotency-Key": "has space"}
                ),
                400,
            ),
            (
                await c.post(
                    "/v1/runs",
                    content=json.dumps({"input": {"x": "a" * 2_000_000}}),
                    headers={"content-type": "application/json"},
                ),
                413,
            ),
            (
                await c.post(
                    "/v1/runs",
                    content=b'{"input": {"a": "nul\\u0000"}}',
                    headers={"content-type": "application/json"},
                ),
                422,
            ),
            (
                await c.post(
                    "/v1/runs",
                    content=b'{"input": {"a": NaN}}',
                    headers={"content-type": "application/json"},
                ),
                422,
            ),
            (await c.get("/v1/runs", params={"status": "sleeping"}), 422),
            (await c.get("/v1/runs", params={"limit": 0}), 422),
            (await c.get("/v1/runs", params={"cursor": "garbage!"}), 400),
        ]
        run = await post_run(c, input=MESSAGES)
        before = await _count_runs(store)
        cases += [
            (await c.get(f"/v1/runs/{run['id']}/events", params={"after": "-1"}), 400),
            (await c.get(f"/v1/runs/{run['id']}/events", headers={"Last-Event-ID": "abc"}), 400),
            (await c.get(f"/v1/runs/{run['id']}/result", params={"wait": -1}), 422),
            (await c.post(f"/v1/runs/{run['id']}/cancel", json={"reason": 5}), 422),
        ]
        for response, status in cases:
            assert response.status_code == status, (response.request.url, response.text)
            assert response.headers["content-type"] == "application/problem+json", response.text
            problem = response.json()
            assert problem["status"] == status and problem["detail"] and problem["title"]
        status, headers, payload = await _raw_chunked_post(srv.url, 1_050_000)
        assert status == 413 and headers["content-type"] == "application/problem+json"
        assert json.loads(payload)["limit"] == "max_body_bytes"
        assert await _count_runs(store) == before == 1
        snap = (await c.get(f"/v1/runs/{run['id']}")).json()
        assert snap["status"] != "cancelled"


async def test_keepalive_comments_and_the_transport_clock(store: Store, tmp_path: Path) -> None:
    """The server closes a stream when its transport clock runs out, sending keepalive
    comments meanwhile; the run goes on, and the client resumes from its cursor."""
    from tests.harness import make_settings

    settings = make_settings(stream_keepalive=0.2, stream_max_seconds=1.0)
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="slow", config={"configurable": {"sleep": 3}})
        raw = b""
        async with srv.client.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            async for chunk in response.aiter_raw():
                raw += chunk
        text = raw.decode()
        assert ": ping" in text  # keepalive comments
        assert "run.completed" not in text  # closed by the transport clock, not the run
        last = max(int(line[3:].strip()) for line in text.splitlines() if line.startswith("id:"))
        rest: list = []  # type: ignore[type-arg]
        while not rest or rest[-1].event != "run.completed":  # reconnect as a client would
            cursor = rest[-1].id if rest else str(last)
            rest += await collect(srv.client, run["id"], last_event_id=cursor)
        assert _seqs(rest) == list(range(last + 1, last + 1 + len(rest)))
