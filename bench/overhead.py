"""What does outlast cost on top of plain LangGraph? One command; numbers go to bench/results/.

All figures come from one run on one machine and database, so they compare side by side:

(a) direct      ``graph.ainvoke(..., durability="sync")`` with ``AsyncPostgresSaver`` over a
                psycopg pool, one run at a time: the floor any durable LangGraph run pays.
(b) outlast     the same graph through a real ``outlast serve`` subprocess, one at a time:
                ``POST /v1/runs`` then ``GET /v1/runs/{id}/result?wait=30``, end to end.
(c) throughput  ``--runs`` runs, ``--inflight`` at a time, on that server: completed runs/s.
(d) reference   the direct path at the same concurrency, to read (c) against.

(a) and (b) alternate in blocks of ten so drift hits both alike, with a pause after each (b)
block: the server works on for a few ms after answering, which must not land in (a).
Every figure is a median: latencies have a long right tail (GC, fsync, scheduling) that
drags a mean but barely moves a median; p90 is reported beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from graphs import TenState, build  # bench/ is sys.path[0] when run as a script
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
INPUT: TenState = {"steps": []}
BLOCK = 10  # latency samples alternate between (a) and (b) in blocks of this many


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument(
        "--database-url",
        default="postgresql://postgres@127.0.0.1:5432/postgres",
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


async def admin(url: str, statement: sql.Composed) -> None:
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=5
    ) as conn:
        await conn.execute(statement)


class Server:
    """``outlast serve`` as a subprocess; stderr goes to a file shown if it fails."""

    def __init__(self, db_url: str, concurrency: int) -> None:
        with socket.socket() as s:  # a free port
            s.bind(("127.0.0.1", 0))
            self.base = f"http://127.0.0.1:{s.getsockname()[1]}"
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in stop()
        exe = Path(sys.executable).with_name("outlast")
        cmd = [
            str(exe),
            "serve",
            "--database-url",
            db_url,
            "--config",
            str(BENCH / "langgraph.json"),
            "--port",
            self.base.rsplit(":", 1)[1],
            "--log-level",
            "warning",
            "--concurrency",
            str(concurrency),
        ]
        env = {**os.environ, "OUTLAST_POOL_MAX_SIZE": "20"}
        # Own session: Ctrl-C reaches only this script, which then stops the server itself.
        self.proc = subprocess.Popen(
            cmd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=BENCH,
            start_new_session=True,
        )

    def tail(self) -> str:
        self.log.seek(0)
        return "".join(self.log.readlines()[-30:])

    async def ready(self, client: httpx.AsyncClient, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"outlast serve exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if (await client.get(f"{self.base}/readyz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
        raise SystemExit(f"outlast serve not ready after {limit:.0f}s:\n{self.tail()}")

    def stop(self, grace: float = 15.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                print(f"outlast serve ignored SIGTERM for {grace:.0f}s; killing it")
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode not in (0, -signal.SIGTERM):
            print(f"outlast serve exited {self.proc.returncode}:\n{self.tail()}")
        self.log.close()


async def outlast_run(client: httpx.AsyncClient, base: str) -> str:
    r = await client.post(f"{base}/v1/runs", json={"graph": "ten", "input": INPUT})
    while r.status_code == 202:  # accepted, or not finished within wait=30
        r = await client.get(f"{base}/v1/runs/{r.json()['id']}/result", params={"wait": 30})
    if r.status_code != 200:
        raise RuntimeError(f"{r.request.method} {r.request.url} answered {r.status_code}: {r.text}")
    return str(r.json()["status"])


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def throughput(fn: Callable[[], Awaitable[str]], runs: int, inflight: int) -> float:
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
    server = Server(db_url, args.inflight)
    pool = AsyncConnectionPool(
        db_url,
        kwargs={"autocommit": True, "row_factory": dict_row},
        max_size=max(10, args.inflight),
        open=False,
    )
    try:
        async with httpx.AsyncClient(timeout=60.0) as client:
            await server.ready(client)  # the server migrates first; setup() is then a no-op
            await pool.open(wait=True)
            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            graph = build().compile(checkpointer=saver)

            async def direct() -> str:
                cfg: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
                out = await graph.ainvoke(INPUT, cfg, durability="sync")
                return "completed" if len(out["steps"]) == 10 else f"bad result {out}"

            served = functools.partial(outlast_run, client, server.base)
            print(f"latency: {args.warmup} warm-up + {args.samples} samples each, in blocks")
            for fn in (direct, served):
                for _ in range(args.warmup):
                    await fn()
            direct_ms: list[float] = []
            outlast_ms: list[float] = []
            for done in range(0, args.samples, BLOCK):
                n = min(BLOCK, args.samples - done)
                direct_ms += [await timed(direct) for _ in range(n)]
                outlast_ms += [await timed(served) for _ in range(n)]
                await asyncio.sleep(0.2)  # the server's after-run work must not land in (a)
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
        await pool.close()
    a, b = summary(direct_ms), summary(outlast_ms)
    return {
        "direct": a,
        "outlast_single": b,
        "ratio_median": round(b["median_ms"] / a["median_ms"], 3),
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
    dbname = f"outlast_bench_{uuid.uuid4().hex[:8]}"
    try:
        await admin(args.database_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    except psycopg.OperationalError as exc:
        raise SystemExit(
            f"error: Postgres is not reachable at {args.database_url}:\n  {exc}"
            "\nStart it or pass --database-url."
        ) from None
    print(f"database {dbname} created")
    bench_url = urlunsplit(urlsplit(args.database_url)._replace(path=f"/{dbname}"))
    try:
        results = await measure(args, bench_url)
    finally:
        await admin(
            args.database_url,
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)),
        )
        print(f"database {dbname} dropped")
    results |= {
        "config": {k: v for k, v in vars(args).items() if k != "database_url"},
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "langgraph": version("langgraph"),
            "outlast": version("outlast"),
        },
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
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
