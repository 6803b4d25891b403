"""Two or more checkouts of outlast side by side, without a profiler: runs/s and CPU per run.

    git worktree add --detach /tmp/base <commit>
    .venv/bin/python bench/ab.py --label mine --version base=/tmp/base --version new=. \\
        --inflight 10,50 --repeat 3

``bench/profile.py`` says where the time goes but py-spy pauses the server for every
sample, which dilutes a difference of a few per cent; this takes the same figures with
nothing attached. For each level of runs in flight, each version gets its own
``outlast serve`` (``--concurrency`` = the level) on a fresh database, a warm-up, then
``--runs`` runs of the 10-node graph through ``POST /v1/runs`` + ``result?wait``;
versions alternate (ABBA…) and the figures are medians. A version is a checkout run
through ``PYTHONPATH`` (``.`` = this one). Transactions per run are the database's
committed and rolled-back transactions (``pg_stat_database``) over the measured runs:
every statement outside a transaction counts as one, reads included.

Writes ``bench/results/profiles/<label>-ab.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from pathlib import Path
from typing import Any

import httpx
import psycopg
from benchkit import RESULTS, CpuMeter, Outlast, machine, now_iso, r, temp_database
from overhead import outlast_run, throughput

PROFILES = RESULTS / "profiles"


async def one(db_admin: str, checkout: str, inflight: int, runs: int) -> dict[str, float]:
    env = {"PYTHONPATH": checkout} if checkout else {}
    async with temp_database(db_admin) as db:
        server = Outlast(db, concurrency=inflight, env=env)
        try:
            await server.ready()
            limits = httpx.Limits(max_connections=inflight + 10)
            async with httpx.AsyncClient(timeout=60, limits=limits) as client:

                def go() -> Any:
                    return outlast_run(client, server.base)

                await throughput(go, max(40, inflight * 2), inflight)
                xacts = await transactions(db)
                meter = CpuMeter({"server": server.pid}, db).start()
                rate = await throughput(go, runs, inflight)
                used = meter.stop()
                xacts = await transactions(db) - xacts
        finally:
            server.stop()
    return {
        "runs_per_s": rate,
        "transactions_per_run": xacts / runs,
        "server_ms_per_run": used["server"] * 1000 / runs,
        "postgres_ms_per_run": used.get("postgres", 0.0) * 1000 / runs,
    }


async def transactions(db: str) -> int:
    """The database's transactions so far. The statistics collector publishes them with
    a delay of up to ``stats_fetch_consistency``'s snapshot, so the snapshot is cleared
    first; the reading itself is one transaction (counted, and negligible)."""
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        cur = await conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def main(opts: argparse.Namespace) -> None:
    versions = opts.versions
    levels = [int(x) for x in opts.inflight.split(",")]
    samples: dict[str, dict[str, list[dict[str, float]]]] = {}
    for level in levels:
        for rep in range(opts.repeat):
            order = list(versions) if rep % 2 == 0 else list(reversed(versions))
            for name in order:
                got = await one(opts.database_url, versions[name], level, opts.runs)
                samples.setdefault(str(level), {}).setdefault(name, []).append(got)
                print(level, name, {k: r(v, 1) for k, v in got.items()}, flush=True)
    medians = {
        level: {
            name: {k: r(statistics.median(s[k] for s in runs), 2) for k in runs[0]}
            for name, runs in by_version.items()
        }
        for level, by_version in samples.items()
    }
    out = {"when": now_iso(), "machine": machine(), "options": vars(opts), "medians": medians}
    out["samples"] = samples
    PROFILES.mkdir(parents=True, exist_ok=True)
    (PROFILES / f"{opts.label}-ab.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        f"# A/B of outlast checkouts, no profiler ({out['when']})",
        "",
        f"{opts.runs} runs of the 10-node graph per repetition, {opts.repeat} repetitions "
        f"alternated, medians; machine: {json.dumps(out['machine'])}.",
        "",
        "| in flight | version | runs/s | transactions per run | server CPU per run"
        " | Postgres CPU per run |",
        "|---|---|---|---|---|---|",
    ]
    for level, by_version in medians.items():
        for name, m in by_version.items():
            lines.append(
                f"| {level} | `{name}` | {m['runs_per_s']:.1f} | "
                f"{m.get('transactions_per_run', float('nan')):.1f} | "
                f"{m['server_ms_per_run']:.1f} ms | {m['postgres_ms_per_run']:.1f} ms |"
            )
    (PROFILES / f"{opts.label}-ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", required=True, help="names the result files")
    p.add_argument(
        "--version", action="append", required=True, help="LABEL=DIR, a checkout; repeat"
    )
    p.add_argument("--inflight", default="1,10,50", help="comma-separated levels")
    p.add_argument("--runs", type=int, default=300, help="runs per repetition")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    opts = p.parse_args()
    pairs = (v.split("=", 1) for v in opts.version)
    opts.versions = {name: str(Path(d).resolve()) if d else "" for name, d in pairs}
    return opts


if __name__ == "__main__":
    asyncio.run(main(parse()))
