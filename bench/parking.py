"""Parked runs: what 10,000 runs waiting on people cost a worker, and how fast an answer
wakes one.

A run that waits is meant to be a row and a checkpoint: no coroutine, no worker slot, no
memory in any process. To check it, an ``outlast worker`` process (beside an
``outlast serve --no-worker`` API) is

1. warmed up on a few ``parked`` runs (ask a person, then finish), answered to completion,
   so imports, compiled graphs and pools are paid before the baseline;
2. sampled idle with 0 runs parked: RSS every 0.5 s for ``--idle-seconds`` (the median) and
   CPU over the window;
3. given a tenth of ``--parked`` runs of the ``parked`` graph (accepted by 32 clients at
   once), watched until every one is ``waiting``, and sampled again (for half as long);
4. given the other nine tenths, and sampled once all of them are parked.

Two per-run costs come out: the RSS difference between (2) and (4) over all the runs, an
upper bound (a CPython process rarely hands freed memory back, so the allocator high water
of executing runs, at most ``--concurrency`` at a time, lands in it too, once), and the
slope between (3) and (4), which leaves that one-time cost out: what each further parked
run adds. The aim is judged on the slope; both are reported.

Then ``--answers`` parked runs are answered one at a time, each with a client attached to
its stream (``?after=<last seq>``) before ``POST /v1/runs/{id}/input``: the time to the
run's next event (``wait.ended``, written by the API in the answer's transaction), to
``run.started`` (a worker claimed it again) and to ``run.completed``.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from typing import Any

import httpx
import psycopg
from benchkit import (
    CpuMeter,
    Outlast,
    RawHttp,
    SseStream,
    med,
    r,
    rss_bytes,
    run_concurrently,
    status_counts,
    temp_database,
)

BODY = {"graph": "parked", "input": {}}
MIB = 1024 * 1024


async def accept(base: str, total: int, clients: int = 32) -> None:
    counter = itertools.count()

    async def client(_: int) -> None:
        http = RawHttp(base)
        try:
            while (next(counter)) < total:
                status, _, body = await http.request("POST", "/v1/runs", BODY)
                if status != 202:
                    raise RuntimeError(f"POST /v1/runs answered {status}: {body[:300]!r}")
        finally:
            await http.close()

    await run_concurrently(clients, client)


async def until_waiting(conn: psycopg.AsyncConnection[Any], n: int, limit: float) -> None:
    deadline = time.monotonic() + limit
    while True:
        counts = await status_counts(conn)
        if counts.get("waiting", 0) >= n:
            return
        if time.monotonic() > deadline or counts.get("failed"):
            raise RuntimeError(f"not all {n} runs waiting after {limit:.0f} s: {counts}")
        await asyncio.sleep(0.5)


async def sample(pid: int, db: str, seconds: float) -> dict[str, float]:
    """Median RSS over ``seconds`` (a sample every 0.5 s) and the CPU used meanwhile."""
    meter = CpuMeter({"worker": pid}, db).start()
    rss = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        rss.append(rss_bytes(pid))
        await asyncio.sleep(0.5)
    used = meter.stop()
    return {
        "rss_bytes": int(med(rss)),
        "rss_mib": r(med(rss) / MIB, 1),
        "rss_min_mib": r(min(rss) / MIB, 1),
        "rss_max_mib": r(max(rss) / MIB, 1),
        "worker_cpu_percent": r(100 * used["worker"] / seconds, 2),
        "postgres_cpu_percent": r(100 * used["postgres"] / seconds, 2),
    }


async def answer_one(client: httpx.AsyncClient, base: str, run_id: str) -> dict[str, float]:
    """Answer one parked run while following its stream; ms to each milestone."""
    snap = (await client.get(f"{base}/v1/runs/{run_id}")).json()
    stream = SseStream(base, f"/v1/runs/{run_id}/events?after={snap['last_seq']}").events()
    first = await anext(stream)  # the retry hint: the stream is open
    assert first.retry, first
    marks: dict[str, float] = {}
    start = time.time()
    reply = await client.post(
        f"{base}/v1/runs/{run_id}/input", json={"wait_id": snap["wait"]["id"], "value": "yes"}
    )
    reply.raise_for_status()
    async for event in stream:
        if event.id is None:
            continue
        marks.setdefault("next_event_ms", (event.received - start) * 1000)
        if event.event == "run.started":
            marks["run_started_ms"] = (event.received - start) * 1000
        if event.event == "run.completed":
            marks["completed_ms"] = (event.received - start) * 1000
            break
    await stream.aclose()
    return marks


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    n = opts.parked
    async with temp_database(admin_url) as db:
        api = Outlast(db, no_worker=True)
        worker: Outlast | None = None
        try:
            await api.ready()
            worker = Outlast(db, command="worker", concurrency=opts.park_concurrency)
            await worker.ready()
            async with (
                httpx.AsyncClient(timeout=60.0) as client,
                await psycopg.AsyncConnection.connect(db, autocommit=True) as conn,
            ):
                warm = 30
                await accept(api.base, warm)
                await until_waiting(conn, warm, 60)
                cur = await conn.execute("SELECT id::text FROM outlast_runs")
                for (run_id,) in await cur.fetchall():
                    await answer_one(client, api.base, run_id)
                await asyncio.sleep(2.0)
                idle = await sample(worker.pid, db, opts.idle_seconds)
                print(f"  parked: idle worker, 0 runs parked: {idle}")

                # A tenth first, then the rest: the slope between the two samples leaves
                # out what the first runs cost once (allocator high water, lazy imports).
                tenth = max(1, n // 10)
                await accept(api.base, tenth)
                await until_waiting(conn, tenth, max(600.0, n / 5))
                await asyncio.sleep(2.0)
                some = await sample(worker.pid, db, opts.idle_seconds / 2)
                print(f"  parked: idle worker, {tenth} runs parked: {some}")
                resumed = time.monotonic()
                await accept(api.base, n - tenth)
                accepted = time.monotonic() - resumed
                await until_waiting(conn, n, max(600.0, n / 5))
                parked_in = time.monotonic() - resumed
                print(
                    f"  parked: {n - tenth} more runs accepted in {accepted:.0f} s, "
                    f"all {n} waiting {parked_in:.0f} s after the first of them"
                )
                await asyncio.sleep(2.0)
                full = await sample(worker.pid, db, opts.idle_seconds)
                print(f"  parked: idle worker, {n} runs parked: {full}")

                cur = await conn.execute(
                    "SELECT id::text FROM outlast_runs WHERE status = 'waiting'"
                )
                waiting = [row[0] for row in await cur.fetchall()]
                marks = [
                    await answer_one(client, api.base, run_id)
                    for run_id in random.Random(9).sample(waiting, min(opts.answers, len(waiting)))
                ]
        finally:
            if worker is not None:
                worker.stop()
            api.stop()
    delta = full["rss_bytes"] - idle["rss_bytes"]
    slope = (full["rss_bytes"] - some["rss_bytes"]) / (n - tenth)
    return {
        "parked": n,
        "idle_0_runs": idle,
        "idle_tenth_parked": some | {"runs": tenth},
        "idle_parked": full,
        "rss_delta_mib": r(delta / MIB, 1),
        "rss_bytes_per_parked_run": r(delta / n, 1),
        "rss_bytes_per_parked_run_slope": r(slope, 1),
        "seconds_to_accept": r(accepted, 1),
        "seconds_until_all_waiting": r(parked_in, 1),
        "parked_per_s": r((n - tenth) / parked_in, 1),
        "answers": len(marks),
        "answer_to_next_event_p50_ms": r(med([m["next_event_ms"] for m in marks])),
        "answer_to_run_started_p50_ms": r(med([m["run_started_ms"] for m in marks])),
        "answer_to_completed_p50_ms": r(med([m["completed_ms"] for m in marks])),
        "answer_to_next_event_max_ms": r(max(m["next_event_ms"] for m in marks)),
    }
