"""What does outlast cost on top of plain LangGraph? One command; numbers go to bench/results/.

All figures come from one run on one machine and database, so they compare side by side:

(a) direct      ``graph.ainvoke(..., durability="sync")`` with ``AsyncPostgresSaver`` over a
                psycopg pool, one run at a time: the floor any durable LangGraph run pays.
(b) outlast     the same graph through a real ``outlast serve`` subprocess, one at a time:
                ``POST /v1/runs`` then ``GET /v1/runs/{id}/result?wait=30``, end to end.
(c) throughput  ``--runs`` runs, ``--inflight`` at a time, on that server: completed runs/s.
(d) reference   the direct path at the same concurrency, to read (c) against.
(e) floor       the writes the contract asks of a run with nothing else (``floor_runner``),
                in-process: what (b)/(a) cannot go below on this machine and database.

(a), (b) and (e) take turns in blocks of ten so drift hits them alike, with a pause after
each block: the server works on for a few ms after answering, which must not land in the
next.
Every figure is a median: latencies have a long right tail (GC, fsync, scheduling) that
drags a mean but barely moves a median; p90 is reported beside it.

The pieces (the direct runner, the outlast run, the alternating latency loop, the
throughput loop) are imported by the suite (``suite.py``) for its overhead and throughput
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from benchkit import ADMIN_URL, RESULTS, Outlast, machine, now_iso, temp_database
from graphs import TenState, build  # bench/ is sys.path[0] when run as a script
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from outlast.store import Claimant, EventDraft, Lease, NewRun, RunStatus
from outlast.store.postgres import PostgresStore
from outlast.vocabulary import EventType

INPUT: TenState = {"steps": []}
BLOCK = 10  # latency samples alternate between (a) and (b) in blocks of this many


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--database-url",
        default=ADMIN_URL,
        help="admin connection; a fresh database is created next to it and dropped",
    )
    p.add_argument("--runs", type=int, default=200, help="runs per throughput repetition")
    p.add_argument("--inflight", type=int, default=10, help="concurrent runs for throughput")
    p.add_argument("--repeat", type=int, default=3, help="throughput repetitions")
    p.add_argument("--samples", type=int, default=100, help="latency samples for (a) and (b)")
    p.add_argument("--warmup", type=int, default=10, help="latency warm-up runs, not counted")
    return p.parse_args()


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(ms), 3),
        "p90_ms": round(statistics.quantiles(ms, n=10)[8], 3),
        "samples": len(ms),
    }


async def outlast_run(client: httpx.AsyncClient, base: str, graph: str = "ten") -> str:
    """One run end to end: ``POST /v1/runs``, then ``result?wait`` until it is terminal."""
    r = await client.post(f"{base}/v1/runs", json={"graph": graph, "input": INPUT})
    while r.status_code == 202:  # accepted, or not finished within wait=30
        r = await client.get(f"{base}/v1/runs/{r.json()['id']}/result", params={"wait": 30})
    if r.status_code != 200:
        raise RuntimeError(f"{r.request.method} {r.request.url} answered {r.status_code}: {r.text}")
    return str(r.json()["status"])


@contextlib.asynccontextmanager
async def direct_runner(db_url: str, pool_size: int) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """Plain LangGraph on the same database: the 10-node graph compiled with
    ``AsyncPostgresSaver`` over a psycopg pool, a new thread per run, durability ``sync``
    (what outlast uses). Open it after an outlast server migrated the database."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        db_url,
        kwargs={"autocommit": True, "row_factory": dict_row},
        max_size=max(10, pool_size),
        open=False,
    )
    await pool.open(wait=True)
    try:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        await saver.setup()  # a no-op once outlast migrated
        graph = build().compile(checkpointer=saver)

        async def direct() -> str:
            cfg: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
            out = await graph.ainvoke(INPUT, cfg, durability="sync")
            return "completed" if len(out["steps"]) == 10 else f"bad result {out}"

        yield direct
    finally:
        await pool.close()


class _OneEventPerStep:
    """What a run's event sink lends the checkpoint writes in a plain run of the 10-node
    graph: a ``node.updated`` for every other write (a step's writes, then its
    checkpoint, which carries the step's event)."""

    def __init__(self) -> None:
        self.writes = 0

    def lend(self) -> list[EventDraft] | None:
        self.writes += 1
        if self.writes % 2:
            return None
        return [EventDraft(EventType.NODE_UPDATED, {"node": "n", "update": {"steps": ["n"]}})]

    def settle(self, batch: list[EventDraft], seq: int | None) -> None:
        return None


@contextlib.asynccontextmanager
async def floor_runner(db_url: str) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """The writes outlast's contract asks of a run, with nothing else: no HTTP, no
    runtime, no stream. The run accepted and claimed in one transaction (as an eager
    start does), the graph's checkpoints fenced by its lease and carrying a
    ``node.updated`` per step, the run finished with its result, the result read back.
    Whatever outlast adds beyond this is the server's and the runtime's; this much the
    durability the contract promises costs on this machine and database."""
    store = PostgresStore(db_url, max_size=10)
    await store.open()
    try:
        graph = build().compile()

        async def floor() -> str:
            new = NewRun(
                id=str(uuid.uuid4()),
                thread_id=str(uuid.uuid4()),
                graph="ten",
                input=INPUT,
                config={},
                metadata={},
                budget=None,
                idempotency_key=None,
                fingerprint="floor",
                max_attempts=1,
                claim_for=Claimant("floor", 60.0),
            )
            run, _ = await store.create_run(new)
            lease = Lease(run.id, "floor", run.lease_epoch)
            saver = store.checkpointer(lease, _OneEventPerStep())
            cfg: RunnableConfig = {"configurable": {"thread_id": run.thread_id}}
            out = await graph.copy(update={"checkpointer": saver}).ainvoke(
                INPUT, cfg, durability="sync"
            )
            await store.finish(
                lease,
                RunStatus.COMPLETED,
                EventDraft(EventType.RUN_COMPLETED, {"status": "completed", "result": out}),
                result=out,
            )
            done = await store.get_run(run.id)
            return "completed" if done and len(done.result["steps"]) == 10 else f"bad {done}"

        yield floor
    finally:
        await store.close()


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def alternate(
    direct: Callable[[], Awaitable[str]],
    served: Callable[[], Awaitable[str]],
    samples: int,
    warmup: int,
) -> tuple[list[float], list[float]]:
    """Latency of (a) and (b), one run at a time, alternating in blocks of ``BLOCK``."""
    got = await alternate_many([direct, served], samples, warmup)
    return got[0], got[1]


async def alternate_many(
    fns: list[Callable[[], Awaitable[str]]], samples: int, warmup: int
) -> list[list[float]]:
    """Latency of each, one run at a time, in turn in blocks of ``BLOCK``."""
    for fn in fns:
        for _ in range(warmup):
            await fn()
    ms: list[list[float]] = [[] for _ in fns]
    for done in range(0, samples, BLOCK):
        n = min(BLOCK, samples - done)
        for fn, into in zip(fns, ms, strict=True):
            into += [await timed(fn) for _ in range(n)]
            await asyncio.sleep(0.2)  # the server's after-run work must not land in the next
    return ms


async def throughput(fn: Callable[[], Awaitable[str]], runs: int, inflight: int) -> float:
    """``runs`` runs, at most ``inflight`` at a time: completed runs per second of wall time."""
    gate = asyncio.Semaphore(inflight)

    async def one() -> str:
        async with gate:
            return await fn()

    start = time.perf_counter()
    statuses = await asyncio.gather(*(one() for _ in range(runs)))
    wall = time.perf_counter() - start
    bad = [s for s in statuses if s != "completed"]
    if bad:
        raise RuntimeError(f"{len(bad)}/{runs} runs did not complete: {sorted(set(bad))}")
    return runs / wall


async def measure(args: argparse.Namespace, db_url: str) -> dict[str, Any]:
    server = Outlast(db_url, concurrency=args.inflight)
    try:
        await server.ready()  # the server migrates first
        async with (
            httpx.AsyncClient(timeout=60.0) as client,
            direct_runner(db_url, args.inflight) as direct,
        ):
            served = functools.partial(outlast_run, client, server.base)
            print(f"latency: {args.warmup} warm-up + {args.samples} samples each, in blocks")
            async with floor_runner(db_url) as floor:
                direct_ms, outlast_ms, floor_ms = await alternate_many(
                    [direct, served, floor], args.samples, args.warmup
                )
            rates, direct_rates = [], []
            for i in range(args.repeat):
                rates.append(await throughput(served, args.runs, args.inflight))
                direct_rates.append(await throughput(direct, args.runs, args.inflight))
                print(
                    f"throughput {i + 1}/{args.repeat}: outlast {rates[-1]:.1f} runs/s, "
                    f"direct {direct_rates[-1]:.1f} runs/s"
                )
    finally:
        server.stop()
    a, b, e = summary(direct_ms), summary(outlast_ms), summary(floor_ms)
    return {
        "direct": a,
        "outlast_single": b,
        "ratio_median": round(b["median_ms"] / a["median_ms"], 3),
        "floor": e,
        "floor_ratio_median": round(e["median_ms"] / a["median_ms"], 3),
        "outlast_throughput": {
            "median_runs_per_s": round(statistics.median(rates), 2),
            "rates": [round(r, 2) for r in rates],
            "runs": args.runs,
            "inflight": args.inflight,
            "repeat": args.repeat,
        },
        "direct_throughput": {
            "median_runs_per_s": round(statistics.median(direct_rates), 2),
            "rates": [round(r, 2) for r in direct_rates],
        },
    }


def markdown(r: dict[str, Any]) -> str:
    a, b, t, d = r["direct"], r["outlast_single"], r["outlast_throughput"], r["direct_throughput"]
    n = f"n={a['samples']} after {r['config']['warmup']} warm-up"
    rows = [
        (
            "(a) direct, latency",
            f"{a['median_ms']:.2f} ms",
            f"p90 {a['p90_ms']:.2f} ms; ainvoke + AsyncPostgresSaver, durability=sync; {n}",
        ),
        (
            "(b) outlast, latency",
            f"{b['median_ms']:.2f} ms",
            f"p90 {b['p90_ms']:.2f} ms; POST /v1/runs → result?wait, one at a time; {n}",
        ),
        ("(b)/(a)", f"{r['ratio_median']:.2f}×", "ratio of the medians"),
        (
            "(e) the contract's writes alone, latency",
            f"{r['floor']['median_ms']:.2f} ms",
            f"p90 {r['floor']['p90_ms']:.2f} ms; (a) plus what a durable run must write: "
            "accept + claim in one transaction, every checkpoint fenced by the lease, a "
            "`node.updated` per step carried in them, the finish, the result read; no HTTP, "
            f"no runtime; {n}",
        ),
        (
            "(e)/(a)",
            f"{r['floor_ratio_median']:.2f}×",
            "the floor of (b)/(a) for this contract on this machine and database",
        ),
        (
            "(c) outlast, throughput",
            f"{t['median_runs_per_s']:.1f} runs/s",
            f"median of {t['repeat']} × {t['runs']} runs, {t['inflight']} in flight; "
            f"all {t['rates']}",
        ),
        (
            "(d) direct, throughput",
            f"{d['median_runs_per_s']:.1f} runs/s",
            f"reference for (c): same runs and concurrency, no server; all {d['rates']}",
        ),
    ]
    m = r["machine"]
    lines = [
        f"10-node graph, {m['platform']}, {m['cpus']} CPUs, Python {m['python']}, "
        f"langgraph {m['langgraph']}, {r['date']}",
        "",
        "| figure | value | note |",
        "|---|---|---|",
    ]
    return "\n".join(lines + [f"| {f} | {v} | {note} |" for f, v, note in rows]) + "\n"


async def main() -> None:
    args = parse_args()
    async with temp_database(args.database_url) as bench_url:
        results = await measure(args, bench_url)
    results |= {
        "config": {k: v for k, v in vars(args).items() if k != "database_url"},
        "machine": machine(),
        "date": now_iso(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "overhead.json").write_text(json.dumps(results, indent=2) + "\n")
    table = markdown(results)
    (RESULTS / "overhead.md").write_text("# outlast overhead\n\n" + table)
    print("\n" + table)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
