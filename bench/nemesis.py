"""The nemesis: trials of a workload under one fault each, and what each fault cost.

    .venv/bin/python bench/nemesis.py --trials 1000 --hours 8 --parallel 2  # the full run
    .venv/bin/python bench/nemesis.py --trials 10 --out /tmp/smoke # what CI runs
    .venv/bin/python bench/nemesis.py --backend sqlite             # one process on SQLite

A trial: the deployment of bench/nemesis_cluster.py (two HTTP processes, three that
execute runs) on a Postgres of the bench's own (bench/nemesis_pg.py) takes ``--runs``
runs of ``slow`` on both faces, each followed by a streaming client
(bench/nemesis_work.py); once the first effect is recorded and a random moment later, a
fault drawn in turn from ``--faults`` (bench/nemesis_faults.py) strikes and is healed.
Then the trial measures the recovery (from the heal until every process runs, every HTTP
process is ready and a new run completes) and waits for the runs to settle, at most
``--limit`` seconds, and counts from the record file and the database: runs lost,
finished twice, effects twice, streams not exact, runs stuck.

``--parallel N`` runs N such deployments side by side, each with its own Postgres and
w1 network, taking the next trial as each finishes one: a long run in less time, at the
price of a busier machine (each trial records the load).

With ``--backend sqlite`` the deployment is one ``outlast serve`` whose SQLite store is on
a small tmpfs (tests/disks.py), and the faults are its SIGKILL and a full disk.

Bounded: it stops after ``--trials`` trials or ``--hours``, whichever comes first, and a
trial's every wait has a limit. It exits 1 when any trial lost a run, finished one twice,
did an effect twice, showed a stream that was not exact or left a run stuck.

Writes ``<out>/nemesis.{json,md}`` (``--out`` defaults to bench/results).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # the repository: tests/netns.py makes w1's network

from benchkit import RESULTS, machine, now_iso  # noqa: E402
from nemesis_cluster import LEASE_TTL, Cluster  # noqa: E402
from nemesis_diag import diagnose  # noqa: E402
from nemesis_faults import FAULTS, POSTGRES_FAULTS, SQLITE_FAULTS  # noqa: E402
from nemesis_pg import OwnPostgres  # noqa: E402
from nemesis_work import FINAL, counts, follow, read_log, settle, submit, verdict  # noqa: E402
from peerkit import wait_for  # noqa: E402

from tests import netns  # noqa: E402
from tests.disks import small_disk  # noqa: E402

# recovery's aim (issue 32): the lease and 5 s
RECOVERY_AIM_S = LEASE_TTL + 5.0
COUNTED = ("lost", "twice", "effects_twice", "inexact_streams", "log_repeats", "stuck")


async def probe(cluster: Cluster, pg: OwnPostgres | None, limit: float) -> float | None:
    """Seconds until the deployment serves and claims again, or None if that did not
    happen within ``limit``: every process runs, every HTTP process is ready, a new run
    completes through each of them, and w1 (in its own network) has spoken to Postgres
    since (a claim poll, a renewal or its listener's check: it polls every few seconds
    however idle, ``OUTLAST_QUEUE_POLL``). Without a Postgres or a w1 (SQLite), the
    last is not asked."""
    began = time.monotonic()
    deadline = began + limit
    w1 = cluster.w1_address if pg is not None else None
    since = await _db_now(pg) if pg is not None and w1 is not None else None
    while not await cluster.healthy():
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)
    for base in cluster.bases:
        if not await _a_run_completes(base, deadline):
            return None
    while pg is not None and w1 is not None and not await _w1_spoke(pg, w1, since):
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.2)
    return time.monotonic() - began


async def _a_run_completes(base: str, deadline: float) -> bool:
    body = {"graph": "ten", "input": {}}
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=30.0)) as client:
        while time.monotonic() < deadline:
            try:
                run = (await client.post(f"{base}/v1/runs", json=body)).json()
                got = await client.get(f"{base}/v1/runs/{run['id']}/result?wait=20")
                if got.status_code == 200:
                    return True
            except (httpx.HTTPError, KeyError, ValueError):
                await asyncio.sleep(0.2)
    return False


async def _db_now(pg: OwnPostgres) -> Any:
    async with await psycopg.AsyncConnection.connect(pg.url(), autocommit=True) as conn:
        row = await (await conn.execute("SELECT now()")).fetchone()
    return row[0] if row else None


async def _w1_spoke(pg: OwnPostgres, address: str, since: Any) -> bool:
    async with await psycopg.AsyncConnection.connect(pg.url(), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE client_addr = %s AND state_change > %s",
            (address, since),
        )
        row = await cur.fetchone()
    return bool(row and row[0])


async def trial(
    n: int, fault: str, cluster: Cluster, pg: OwnPostgres | None, opts: Any
) -> dict[str, Any]:
    rng = random.Random(f"{opts.seed}-{n}")
    record = Path(opts.work) / f"trial-{n}.txt"
    runs = await submit(cluster.bases, record, f"t{n}", opts.runs, rng)
    followers = [follow(cluster.bases, run, opts.limit) for run in runs]

    async def effect_done() -> bool:
        return bool(counts(record, "effect"))

    await wait_for(effect_done, opts.limit, step=0.05)
    await asyncio.sleep(rng.uniform(0.0, 1.5))  # strike at a random moment of the runs
    struck = time.monotonic()
    detail = await FAULTS[fault](cluster, pg, rng)
    healed = time.monotonic()
    recovery = await probe(cluster, pg, opts.limit)
    final = await settle(cluster.bases, runs, record, opts.limit)
    await asyncio.wait(followers, timeout=15)
    for task in followers:
        task.cancel()
    out = {"trial": n, "fault": fault, **detail, "fault_s": round(healed - struck, 2)}
    out["load"] = round(os.getloadavg()[0], 2)  # the machine's, as the trial ends
    out["recovery_s"] = None if recovery is None else round(recovery, 2)
    for run in runs:
        await read_log(cluster.bases, run)
    stuck = [(r.key, r.run_id) for r in runs if final.get(r.key) not in FINAL]
    if stuck:
        out["stuck_files"] = await diagnose(cluster, pg, stuck, Path(opts.out), n)
    done = counts(record, "done")
    twice = [(r.key, r.run_id) for r in runs if done[r.key] > 1]
    if twice:
        out["twice_files"] = await diagnose(cluster, pg, twice, Path(opts.out), n, "twice")
    return out | verdict(runs, record, final)


def _loads(results: list[dict[str, Any]]) -> str:
    loads = sorted(r["load"] for r in results if r.get("load") is not None)
    if not loads:
        return "not recorded"
    return f"median {statistics.median(loads):.2f}, max {loads[-1]:.2f}"


def table(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for fault in sorted({r["fault"] for r in results}):
        mine = [r for r in results if r["fault"] == fault]
        times = sorted(r["recovery_s"] for r in mine if r["recovery_s"] is not None)
        row: dict[str, Any] = {"trials": len(mine), "runs": sum(r["runs"] for r in mine)}
        row |= {k: sum(r[k] for r in mine) for k in COUNTED}
        row["not_recovered"] = sum(1 for r in mine if r["recovery_s"] is None)
        row["past_aim"] = sum(1 for t in times if t > RECOVERY_AIM_S)
        row["recovery_p50_s"] = round(statistics.median(times), 2) if times else None
        row["recovery_p99_s"] = (
            times[min(len(times) - 1, int(len(times) * 0.99))] if times else None
        )
        rows[fault] = row
    return rows


def write(opts: Any, results: list[dict[str, Any]], started: dict[str, Any]) -> dict[str, Any]:
    rows = table(results)
    out = {**started, "ended": now_iso(), "load_at_end": os.getloadavg(), "table": rows}
    out["trials"] = results
    folder = Path(opts.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nemesis.json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        f"# Nemesis ({started['when']} to {out['ended']}"
        + (f"; resumed {started['resumed']['when']}" if "resumed" in started else "")
        + ")",
        "",
        f"{len(results)} trials of {opts.runs} runs each, seed `{opts.seed}`; machine: "
        f"{json.dumps(started['machine'])}; load at the end {out['load_at_end']}.",
        "",
        f"Recovery: from the fault's end until every process serves and claims again; the"
        f" aim is the lease + 5 s ({RECOVERY_AIM_S:g} s), and 'past the aim' counts the"
        f" trials that took longer. Load (1 min) over the trials: {_loads(results)}.",
        "",
        "| fault | trials | runs | lost | twice | effects twice | inexact streams"
        " | repeats in the log | stuck | not recovered | past the aim | recovery p50"
        " | recovery p99 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fault, row in rows.items():
        cells = [row[k] for k in ("trials", "runs", *COUNTED, "not_recovered", "past_aim")]
        times = [
            f"{row[k]} s" if row[k] is not None else "-"
            for k in ("recovery_p50_s", "recovery_p99_s")
        ]
        lines.append(f"| `{fault}` | " + " | ".join(map(str, cells + times)) + " |")
    (folder / "nemesis.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return out


async def main(opts: Any) -> int:
    with contextlib.ExitStack() as stack:
        if opts.backend == "sqlite":
            disk = stack.enter_context(small_disk(Path(opts.work) / "disk", opts.disk_mb))
            return await run_trials(opts, [(Cluster(None, disk=disk), None)])
        if netns.missing() and {"partition", "latency"} & set(opts.faults.split(",")):
            raise SystemExit(f"error: w1's link needs network namespaces ({netns.missing()})")
        links = [
            None if netns.missing() else stack.enter_context(netns.link())
            for _ in range(opts.parallel)
        ]
        return await deployments(opts, links)


async def deployment(opts: Any, link: netns.Link | None) -> int:
    """The trials on one Postgres deployment, on a Postgres made for them."""
    return await deployments(opts, [link])


async def deployments(opts: Any, links: list[netns.Link | None]) -> int:
    """The trials on one Postgres deployment per link, each on a Postgres of its own."""
    pgs = [OwnPostgres(("127.0.0.1", link.host_ip) if link else ("127.0.0.1",)) for link in links]
    try:
        for pg in pgs:
            await pg.create()
        lanes = [(Cluster(pg, link), pg) for pg, link in zip(pgs, links, strict=True)]
        return await run_trials(opts, lanes)
    finally:
        for pg in pgs:
            await pg.remove()


def resumed(opts: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Where the run begins: afresh, or (``--resume``) an earlier run that met its time
    bound, its trials kept, its start and options the run's, this start noted."""
    started = {"when": now_iso(), "machine": machine(), "options": vars(opts)}
    if not opts.resume:
        return started, []
    earlier = json.loads(Path(opts.resume).read_text())
    kept = {k: earlier[k] for k in ("when", "machine", "options")}
    return {**kept, "resumed": started}, list(earlier["trials"])


async def run_trials(opts: Any, lanes: list[tuple[Cluster, OwnPostgres | None]]) -> int:
    """``opts.trials`` trials, shared by the deployments of ``lanes`` (each a cluster and
    its Postgres, None on SQLite), which take the next trial as they finish one: several
    deployments side by side make a long run shorter (``--parallel``), each trial on its
    own deployment, whose faults touch nothing of the others'."""
    started, results = resumed(opts)
    numbers = itertools.count(max((int(r["trial"]) + 1 for r in results), default=0))
    stop_at = time.monotonic() + opts.hours * 3600
    try:
        async with asyncio.TaskGroup() as group:
            for cluster, pg in lanes:
                group.create_task(_lane(opts, cluster, pg, numbers, stop_at, results))
    finally:  # a trial that could not go on ends the run; those before it are kept
        results.sort(key=lambda r: int(r["trial"]))
        rows = write(opts, results, started)["table"]
    return 1 if any(row[k] for row in rows.values() for k in COUNTED) else 0


async def _lane(
    opts: Any,
    cluster: Cluster,
    pg: OwnPostgres | None,
    numbers: Iterator[int],
    stop_at: float,
    results: list[dict[str, Any]],
) -> None:
    faults = opts.faults.split(",")
    cluster.partition_s, cluster.latency_s = opts.partition_s, opts.latency_s
    try:
        first, *others = cluster.members  # the first migrates the database, alone
        await cluster.start(first)
        if others:
            await cluster.start(*others)
        while (n := next(numbers)) < opts.trials and time.monotonic() <= stop_at:
            result = await trial(n, faults[n % len(faults)], cluster, pg, opts)
            results.append(result)
            print(json.dumps({k: v for k, v in result.items() if k != "inexact"}), flush=True)
    finally:
        cluster.stop()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--hours", type=float, default=1.0, help="stop after this long")
    p.add_argument("--runs", type=int, default=6, help="runs per trial")
    p.add_argument("--limit", type=float, default=60.0, help="seconds a trial's runs may take")
    p.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    p.add_argument("--faults", help="comma-separated, in turn (default: all the backend's)")
    p.add_argument("--seed", default="nemesis")
    p.add_argument("--partition-seconds", default="5,120", help="the partition's length: min,max")
    p.add_argument("--latency-seconds", default="5,30", help="the latency's length: min,max")
    # Each full_disk trial leaves its accepted bulky signals in the database (about 1.5 MB):
    # 32 MiB filled for good after 29 trials, and the deployment never came back.
    p.add_argument("--disk-mb", type=int, default=256, help="the SQLite tmpfs's size")
    p.add_argument(
        "--parallel", type=int, default=1, help="Postgres deployments side by side (own links)"
    )
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument(
        "--resume",
        help="an earlier run's nemesis.json: keep its trials and go on from the next one "
        "(same seed and faults), up to --trials in all",
    )
    opts = p.parse_args(argv)
    known = SQLITE_FAULTS if opts.backend == "sqlite" else POSTGRES_FAULTS
    opts.faults = opts.faults or ",".join(known)
    unknown = set(opts.faults.split(",")) - set(known)
    if unknown:
        p.error(f"faults {sorted(unknown)} not for {opts.backend}; known: {', '.join(known)}")
    opts.work = tempfile.mkdtemp(prefix="outlast-nemesis-")
    opts.partition_s = _span(opts.partition_seconds)
    opts.latency_s = _span(opts.latency_seconds)
    return opts


def _span(text: str) -> tuple[float, float]:
    low, high = (float(x) for x in text.split(","))
    return low, high


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse())))
