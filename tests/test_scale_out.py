"""Scale-out on Postgres: two API processes and two workers; one of each is killed.

Every run completes, every client stream (following through whichever API answers) sees
each event exactly once, both workers took work, and the database connections stay
bounded however many clients stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.harness import eventually, open_pg, sse_events
from tests.procs import all_events, assert_exact_log, kill, start_server, start_worker

pytestmark = pytest.mark.slow


async def _follow(urls: list[str], run_id: str) -> tuple[list[int], int]:
    """Follow a run through the first API that answers, failing over to the others with
    Last-Event-ID; returns the seqs seen and how many times it had to reconnect."""
    seqs: list[int] = []
    reconnects = 0
    turn = 0
    while True:
        url = urls[turn % len(urls)]
        headers = {"Last-Event-ID": str(seqs[-1])} if seqs else {}
        try:
            async with (
                httpx.AsyncClient(base_url=url, timeout=10) as client,
                client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as response,
            ):
                async for event in sse_events(response):
                    if event.id is not None:
                        seqs.append(int(event.id))
                    if event.event in ("run.completed", "run.failed", "run.cancelled"):
                        return seqs, reconnects
        except httpx.HTTPError:
            pass
        reconnects += 1
        turn += 1
        await asyncio.sleep(0.2)


# The processes under test name themselves, so that the count is theirs alone: a
# connection another test left closing in this database is not theirs to answer for.
APP = "outlast-scale-out"


def _connections(pg_url: str) -> int:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            (APP,),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_two_apis_two_workers_one_of_each_killed(pg_url: str, tmp_path: Path) -> None:
    pool = {"OUTLAST_POOL_MAX_SIZE": "4"}
    named = f"{pg_url}?application_name={APP}"
    api1, url1 = start_server(named, tmp_path / "api1.log", "--no-worker", **pool)
    api2, url2 = start_server(named, tmp_path / "api2.log", "--no-worker", **pool)
    w1 = start_worker(named, tmp_path / "w1.log", **pool)
    w2 = start_worker(named, tmp_path / "w2.log", **pool)
    procs = [api1, api2, w1, w2]
    store = await open_pg(pg_url, truncate=False)
    try:
        for log in ("w1.log", "w2.log"):  # both workers are up and listening
            await eventually(
                lambda log=log: "outlast worker" in (tmp_path / log).read_text(errors="replace"),
                what=f"{log}: the worker up",
            )
        body = {"graph": "steps", "config": {"configurable": {"step_delay": 0.5}}}
        runs: list[str] = []
        for i in range(8):
            async with httpx.AsyncClient(base_url=(url1, url2)[i % 2], timeout=10) as client:
                runs.append((await client.post("/v1/runs", json=body)).json()["id"])
        # Half the clients start on the API that will die, half on the other.
        followers = [
            asyncio.create_task(_follow([url1, url2] if i % 2 == 0 else [url2, url1], r))
            for i, r in enumerate(runs)
        ]
        # Idle watchers too: connections to the database must not grow with clients.
        watchers = [asyncio.create_task(_follow([url2], r)) for r in runs for _ in range(5)]
        await asyncio.sleep(1.5)
        busy = _connections(pg_url)
        kill(api1)  # SIGKILL, mid-stream
        kill(w1)  # SIGKILL, mid-run
        results = await asyncio.wait_for(asyncio.gather(*followers), 120)
        await asyncio.wait_for(asyncio.gather(*watchers), 60)
        for run_id, (seqs, _) in zip(runs, results, strict=True):
            run = await store.get_run(run_id)
            assert run is not None and run.status.value == "completed", run
            events = await all_events(store, run_id)
            assert_exact_log(events)
            assert seqs == [e.seq for e in events]  # exact, across the failover
        assert sum(reconnects for _, reconnects in results) >= 4  # api1's clients moved
        first_claims: dict[str, int] = {}
        for run_id in runs:
            events = await all_events(store, run_id)
            started = [e for e in events if e.type == "run.started"]
            worker = started[0].data["worker_id"]
            first_claims[worker] = first_claims.get(worker, 0) + 1
        # both workers took a share of the queue
        assert len(first_claims) == 2 and min(first_claims.values()) >= 2, first_claims
        # Each process: its pool of 4 and its listener; an API also opens a second
        # listener for the event streams it serves. That bounds it with 48 streams open.
        assert 4 <= busy <= 2 * (4 + 2) + 2 * (4 + 1), busy
    finally:
        for proc in procs:
            with contextlib.suppress(Exception):
                kill(proc, signal.SIGTERM)
        await store.close()
