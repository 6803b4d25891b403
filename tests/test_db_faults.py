"""Postgres restarted in the middle of runs: the test stops and starts the local server.

The server process (API and worker) rides it out: its pool replaces dead connections,
`/readyz` says 503 while the database is away and 200 when it is back, the writes the
outage failed go again in place so runs continue where they were (no step runs twice),
and clients that reconnect get every event exactly once.

Marked ``serial``: it takes the database away from everything else running at the time,
so ``make test`` runs it after the parallel part of the suite. A cut of one connection (a
checkpoint write's), which hurts nobody else, is ``tests/test_pg_cut.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.harness import open_pg, sse_events
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
                # the writes the outage failed went again in place (store/outage.py):
                # no run was given back or requeued, so no step ran twice
                assert not {"run.released", "run.requeued"} & {e.type for e in events}, shown
                nodes = [e.data["node"] for e in events if e.type == "node.updated"]
                assert len(nodes) == len(set(nodes)), shown
        finally:
            await store.close()
        assert server.poll() is None  # it rode the outage out
    finally:
        if restarted:
            with contextlib.suppress(subprocess.CalledProcessError):
                _cluster("start")  # never leave the machine without its database
        kill(server)
