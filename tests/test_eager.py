"""Eager start through the API (runtime/eager.py): a run posted to a server whose worker
is idle starts inside the acceptance, on both faces; a busy worker, a thread with a run
in flight or ``OUTLAST_EAGER_START=false`` queue it; a server killed between the
acceptance and the start loses nothing."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from outlast.store import Store
from outlast.store.hub import CONTROL, wait_for
from outlast.store.postgres import PostgresStore
from outlast.vocabulary import RunStatus
from tests.harness import (
    Server,
    collect,
    eventually,
    make_settings,
    serve,
    wait_result,
    wait_status,
)
from tests.procs import (
    all_events,
    assert_exact_log,
    kill,
    start_server,
    start_worker,
    wait_for_status,
)

MESSAGES = {"messages": [{"role": "user", "content": "hello"}]}


# The worker's safety-net poll would wake it for a moment every few seconds, and a run
# posted in that moment queues: these servers poll too rarely for it to happen in a test.
QUIET = {"queue_poll": 120.0}


async def _idle(srv: Server) -> None:
    """Every notification sent so far delivered and acted on, and the worker idle. On
    Postgres a ``NOTIFY`` arrives through the listener some time after its commit (a run
    that queued wakes the worker then, and it looks for work again; so does the listener
    once it connects): a marker sent after them arrives after them."""
    store = srv.store
    if isinstance(store, PostgresStore):
        marker = f"idle-{uuid.uuid4()}"
        with store.hub.watch(CONTROL, marker) as seen:
            while not seen.is_set():  # resent: a first one may come before the LISTEN
                async with store.pool.connection() as conn:
                    await conn.execute("SELECT pg_notify('outlast_control', %s)", (marker,))
                await wait_for(seen, 0.5)
    worker = srv.app.state.ctx.worker
    await eventually(lambda: worker.takes_runs_now, what="the worker idle, queue drained")


def _eager_starts(metrics: str) -> float:
    name = "outlast_worker_eager_starts_total"
    line = next(x for x in metrics.splitlines() if x.startswith(name))
    return float(line.split()[-1])


async def test_a_run_posted_to_an_idle_server_is_running_when_accepted(store: Store) -> None:
    async with serve(store, make_settings(**QUIET)) as srv:
        await _idle(srv)
        before = _eager_starts((await srv.client.get("/metrics")).text)
        response = await srv.client.post("/v1/runs", json={"input": MESSAGES})
        assert response.status_code == 202
        run = response.json()
        assert response.headers["location"] == f"/v1/runs/{run['id']}"
        # the snapshot is what was committed: already claimed by this server's worker
        assert run["status"] == "running" and run["last_seq"] == 2 and run["attempts"] == 1
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["attempts"] == 1
        events = await collect(srv.client, run["id"])
        assert [e.event for e in events][:2] == ["run.created", "run.started"]
        assert [int(e.id) for e in events if e.id] == list(range(1, len(events) + 1))
        after = _eager_starts((await srv.client.get("/metrics")).text)
        assert after == before + 1


async def test_it_can_be_switched_off(store: Store) -> None:
    async with serve(store, make_settings(eager_start=False)) as srv:
        assert not srv.app.state.ctx.worker.takes_runs_now  # type: ignore[union-attr]
        run = (await srv.client.post("/v1/runs", json={"input": MESSAGES})).json()
        assert run["status"] == "queued" and run["last_seq"] == 1
        assert (await wait_result(srv.client, run["id"]))["status"] == "completed"


SLOW = {"graph": "slow", "input": {}, "config": {"configurable": {"sleep": 0.3}}}


async def test_a_full_worker_queues_the_run(store: Store) -> None:
    async with serve(store, make_settings(worker_concurrency=2, **QUIET)) as srv:
        await _idle(srv)
        first = (await srv.client.post("/v1/runs", json=SLOW)).json()
        second = (await srv.client.post("/v1/runs", json=SLOW)).json()
        assert first["status"] == second["status"] == "running"  # the two slots
        third = (await srv.client.post("/v1/runs", json=SLOW)).json()
        assert third["status"] == "queued"  # no slot left: the queue, as without it
        for run in (first, second, third):
            assert (await wait_result(srv.client, run["id"]))["status"] == "completed"


async def test_a_busy_thread_queues_the_run(store: Store) -> None:
    async with serve(store, make_settings(worker_concurrency=2, **QUIET)) as srv:
        await _idle(srv)
        first = (await srv.client.post("/v1/threads/t1/runs", json=SLOW)).json()
        assert first["status"] == "running"
        # the thread's next run waits for it, though the worker has a free slot
        behind = (
            await srv.client.post("/v1/threads/t1/runs", json={**SLOW, "if_busy": "enqueue"})
        ).json()
        assert behind["status"] == "queued"
        for run in (first, behind):
            assert (await wait_result(srv.client, run["id"]))["status"] == "completed"


async def test_the_langgraph_face_starts_it_too(store: Store) -> None:
    async with serve(store, make_settings(**QUIET)) as srv:
        await _idle(srv)
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "lg_chat", input={"messages": []})
        # the LangGraph face answers "pending", as LangGraph's server does; the run was
        # claimed in its acceptance's transaction all the same
        assert run["status"] == "pending"
        started = (await srv.client.get(f"/v1/runs/{run['run_id']}")).json()
        assert started["status"] in ("running", "completed"), started
        done = await client.runs.join(thread, run["run_id"])
        assert done["messages"][-1]["content"].startswith("echo(")
        delayed = await client.runs.create(thread, "lg_chat", input={}, after_seconds=30)
        assert delayed["status"] == "pending"  # it would only park on its timer
        await wait_status(srv.client, delayed["run_id"], "waiting")


@pytest.mark.slow
async def test_a_server_killed_between_acceptance_and_start_loses_nothing(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """Fault point worker.eager_start: the acceptance committed the run as claimed by
    this server's worker, which dies before starting it, inside the request. The lease
    nobody renews runs out, and another worker runs it from the start."""
    count = tmp_path / "count.log"
    body = {"graph": "counted", "input": {}, "config": {"configurable": {"count_file": str(count)}}}
    server, url = start_server(db_url, tmp_path / "serve.log", OUTLAST_FAULTS="worker.eager_start")
    second = None
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:

            async def killed() -> bool:
                # the first runs may come before the worker's first claim: they queue
                # and finish; the first run that starts eagerly kills the server
                try:
                    response = await client.post("/v1/runs", json=body)
                except httpx.TransportError:
                    return True
                await wait_result(client, response.json()["id"])  # one running at a time
                return False

            await eventually(killed, every=0.05, what="a run started eagerly")
        assert server.wait(timeout=30) < 0
        running = RunStatus.RUNNING
        runs = await store.list_runs(thread_id=None, status=running, limit=10, before=None)
        assert len(runs) == 1
        run_id = runs[0].id
        second = start_worker(db_url, tmp_path / "worker.log")
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(server)
        if second is not None:
            kill(second)
    assert final.status == RunStatus.COMPLETED and final.attempts == 2
    events = await all_events(store, run_id)
    assert_exact_log(events)
    started = [e for e in events if e.type == "run.started"]
    assert [e.data["attempt"] for e in started] == [1, 2]


async def test_a_replayed_request_starts_nothing(store: Store) -> None:
    """The first request's run was claimed but never started (its request was cancelled
    between the commit and the start); its retry returns it and starts nothing: the
    reaper gives it back to the queue once the lease nobody renews has run out."""
    async with serve(store, make_settings(**QUIET)) as srv:
        worker = srv.app.state.ctx.worker
        adopt = worker.adopt
        worker.adopt = lambda run: adopt(None)  # the first acceptance loses its run
        await _idle(srv)
        headers = {"Idempotency-Key": "once"}
        first = await srv.client.post("/v1/runs", json={"input": MESSAGES}, headers=headers)
        assert first.json()["status"] == "running"
        worker.adopt = adopt
        await _idle(srv)
        again = await srv.client.post("/v1/runs", json={"input": MESSAGES}, headers=headers)
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json()["id"] == first.json()["id"]
        assert first.json()["id"] not in worker.held
        final = await wait_result(srv.client, first.json()["id"])
        assert final["status"] == "completed" and final["attempts"] == 2
