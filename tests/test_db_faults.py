"""Postgres restarted in the middle of runs: the test stops and starts the local server.

The server process (API and worker) rides it out: its pool replaces dead connections,
`/readyz` says 503 while the database is away and 200 when it is back, runs continue from
their checkpoints, and clients that reconnect get every event exactly once.

Marked ``serial``: it takes the database away from everything else running at the time,
so ``make test`` runs it after the parallel part of the suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import open_pg
from tests.harness import sse_events
from tests.procs import all_events, assert_exact_log, kill, start_server

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def _cluster(action: str) -> None:
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[0]
    mode = ["-m", "fast"] if action == "stop" else []
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action, *mode],
        check=True,
        capture_output=True,
        timeout=60,
    )


async def _follow(url: str, run_id: str) -> list[int]:
    """A client that reconnects with Last-Event-ID until the run's terminal event."""
    seqs: list[int] = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        while True:
            headers = {"Last-Event-ID": str(seqs[-1])} if seqs else {}
            try:
                async with client.stream(
                    "GET", f"/v1/runs/{run_id}/events", headers=headers
                ) as response:
                    if response.status_code != 200:
                        await asyncio.sleep(0.3)
                        continue
                    async for event in sse_events(response):
                        if event.id is not None:
                            seqs.append(int(event.id))
                        if event.event in ("run.completed", "run.failed", "run.cancelled"):
                            return seqs
            except httpx.HTTPError:
                await asyncio.sleep(0.3)


async def _ready(client: httpx.AsyncClient, status: int, timeout: float = 30) -> None:
    for _ in range(int(timeout / 0.1)):
        with contextlib.suppress(httpx.HTTPError):
            if (await client.get("/readyz")).status_code == status:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz never answered {status}")


async def test_a_postgres_restart_mid_run_loses_nothing(pg_url: str, tmp_path: Path) -> None:
    server, url = start_server(pg_url, tmp_path / "server.log")
    restarted = False
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            body = {"graph": "steps", "config": {"configurable": {"step_delay": 0.7}}}
            runs = [(await client.post("/v1/runs", json=body)).json()["id"] for _ in range(4)]
            followers = [asyncio.create_task(_follow(url, run_id)) for run_id in runs]
            await asyncio.sleep(1.2)  # the runs are inside their steps
            _cluster("stop")
            restarted = True
            await _ready(client, 503)
            await asyncio.sleep(1.5)
            _cluster("start")
            await _ready(client, 200)
            seen = await asyncio.wait_for(asyncio.gather(*followers), 90)
            finals = [
                (await client.get(f"/v1/runs/{r}/result", params={"wait": 30})).json() for r in runs
            ]
        assert [f["status"] for f in finals] == ["completed"] * 4, finals
        store = await open_pg(pg_url, truncate=False)
        try:
            for run_id, client_seqs in zip(runs, seen, strict=True):
                events = await all_events(store, run_id)
                assert_exact_log(events)
                assert client_seqs == [e.seq for e in events]  # nothing lost, nothing twice
                steps = [e.data["update"]["steps"] for e in events if e.type == "node.updated"]
                shown = " ".join(f"{e.seq}:{e.type}:{e.data.get('node')}" for e in events)
                assert [s[0] for s in steps][-1] == "finish", shown
        finally:
            await store.close()
        assert server.poll() is None  # it rode the outage out
    finally:
        if restarted:
            with contextlib.suppress(subprocess.CalledProcessError):
                _cluster("start")  # never leave the machine without its database
        kill(server)


@pytest.mark.serial
async def test_a_checkpoint_write_that_fails_requeues_the_run(store: Any) -> None:
    """The database fails one checkpoint write mid-run: the run is not failed (not its
    fault), nothing half-written shows, and it resumes from its last checkpoint."""
    import psycopg

    from tests.harness import make_settings, post_run, serve, wait_result

    real = store.checkpointer
    failed: list[int] = []

    def flaky(lease: Any = None, events: Any = None) -> Any:
        saver = real(lease, events)
        original = saver.aput
        count = {"n": 0}

        async def aput(*args: Any, **kwargs: Any) -> Any:
            count["n"] += 1
            if count["n"] == 3 and not failed:
                failed.append(1)
                raise psycopg.OperationalError("server closed the connection unexpectedly")
            return await original(*args, **kwargs)

        saver.aput = aput
        return saver

    store.checkpointer = flaky
    settings = make_settings(worker_lease_ttl=1.0, worker_heartbeat=0.3, reaper_interval=0.3)
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, graph="steps", input={})
        final = await wait_result(srv.client, run["id"])
    assert failed and final["status"] == "completed" and final["attempts"] == 2
    events = await all_events(store, run["id"])
    assert_exact_log(events)
    assert "run.failed" not in [e.type for e in events]
    assert [e.type for e in events].count("run.requeued") == 1
