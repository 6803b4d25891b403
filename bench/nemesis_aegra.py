"""The nemesis against Aegra: the same faults on the same workload, beside outlast's.

    .venv/bin/python bench/nemesis_aegra.py --trials 30 --out bench/results
    .venv/bin/python bench/nemesis_aegra.py --trials 5 --faults kill_one --out /tmp/x
    .venv/bin/python bench/nemesis_aegra.py --render    # the .md again, from the .json

The deployment (bench/nemesis_aegra_cluster.py): two Aegra processes in Redis mode, as
bench/peers.py installs it (aegra-api in a Python 3.12 venv under .artifacts/peers), on a
Postgres (bench/nemesis_pg.py) and a Redis of the bench's own; ``a2`` runs in a network
namespace. A trial: ``--runs`` runs of ``slow`` through ``langgraph_sdk``, each followed
by a client that rejoins with the last event id (bench/nemesis_aegra_work.py); once the
first effect is recorded and a random moment later, a fault drawn in turn strikes and is
healed: ``kill_one``, ``kill_all``, ``pg_fast`` and ``pg_immediate`` are
bench/nemesis_faults.py's own; ``partition`` cuts ``a2`` from Postgres, Redis and its
clients for ``--partition-seconds``. Then the recovery (every process runs and answers
``/ready``, and a new run made through each completes) and the runs' settling, each at
most ``--limit`` seconds, and the counts of bench/nemesis.py, from the record file and
what the followers saw.

``--limit`` is 180 s here, not 60: Aegra takes a dead process's runs back when their lease
(30 s) ran out and its reaper (every 15 s) saw it, 30 to 50 s after a SIGKILL.

Writes ``<out>/nemesis-aegra.{json,md}``; exits 1 when any trial lost a run, finished one
twice, did an effect twice, showed a stream that was not exact or left a run stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import psycopg

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # the repository: tests/netns.py makes a2's network

from benchkit import RESULTS, machine, now_iso  # noqa: E402
from nemesis import COUNTED, table  # noqa: E402
from nemesis_aegra_cluster import AegraCluster, OwnRedis  # noqa: E402
from nemesis_aegra_work import (  # noqa: E402
    AegraFollowed,
    a_run_completes,
    read_log,
    settle,
    statuses,
    submit,
)
from nemesis_faults import FAULTS  # noqa: E402
from nemesis_pg import OwnPostgres  # noqa: E402
from nemesis_work import FINAL, counts, follow_lg, verdict  # noqa: E402
from peer_servers import AEGRA_VERSION, ensure_aegra  # noqa: E402
from peerkit import wait_for  # noqa: E402
from peers import ARTIFACTS  # noqa: E402

from tests import netns  # noqa: E402


async def partition(cluster: AegraCluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    """bench/nemesis_faults.py's partition, on ``a2``: every packet between its namespace
    and the host dropped (Postgres, Redis and its clients alike), then healed."""
    if cluster.link is None:
        raise RuntimeError("no network namespace for a2: the partition needs root and ip")
    held = rng.uniform(*cluster.partition_s)
    cluster.link.cut()
    try:
        await asyncio.sleep(held)
    finally:
        cluster.link.heal()
    return {"target": cluster.cut_off.name, "seconds": round(held, 1)}


# The shared faults use of the cluster only what AegraCluster has (members, kill, start).
SHARED = ("kill_one", "kill_all", "pg_fast", "pg_immediate")
AEGRA_FAULTS: dict[str, Any] = {name: FAULTS[name] for name in SHARED}
AEGRA_FAULTS["partition"] = partition


async def probe(cluster: AegraCluster, limit: float) -> float | None:
    """Seconds until every process runs and is ready and a new run made through each
    completes, or None if that did not happen within ``limit``."""
    began = time.monotonic()
    deadline = began + limit
    while not await cluster.healthy():
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.1)
    for base in cluster.bases:
        if not await a_run_completes(base, deadline):
            return None
    return time.monotonic() - began


async def holders(
    cluster: AegraCluster, pg: OwnPostgres, runs: list[AegraFollowed]
) -> dict[str, int]:
    """How many of the trial's runs each member executes now (Aegra's ``claimed_by`` is
    ``<host>-<pid>-worker-<n>``), and how many are in each other status: what a fault
    struck."""
    async with await psycopg.AsyncConnection.connect(pg.url(), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT status, claimed_by FROM runs WHERE run_id::text = ANY(%s)",
            ([r.run_id for r in runs],),
        )
        rows = await cur.fetchall()
    pids = {m.proc.pid: name for name, m in cluster.members.items() if m.proc is not None}
    out: dict[str, int] = {}
    for status, who in rows:
        name = str(status)
        if status == "running" and who:
            pid = str(who).rsplit("-worker-", 1)[0].rsplit("-", 1)[-1]
            name = pids.get(int(pid), "gone") if pid.isdigit() else str(who)
        out[name] = out.get(name, 0) + 1
    return out


async def _stuck_file(cluster: AegraCluster, runs: list[AegraFollowed], opts: Any, n: int) -> str:
    """What a stuck trial leaves to read: each stuck run's status and both servers' tails."""
    now = await statuses(cluster.bases, runs)
    text = [f"{r.key} {r.run_id} thread {r.thread_id}: {now[r.key]}" for r in runs]
    for member in cluster.members.values():
        text += [f"== {member.name}", member.tail()]
    path = Path(opts.out) / f"stuck-aegra-{n}.txt"
    path.write_text("\n".join(text) + "\n")
    return path.name


async def trial(
    n: int, fault: str, cluster: AegraCluster, pg: OwnPostgres, opts: Any
) -> dict[str, Any]:
    rng = random.Random(f"{opts.seed}-{n}")
    record = Path(opts.work) / f"trial-{n}.txt"
    runs = await submit(cluster.bases, record, f"t{n}", opts.runs, rng)
    followers = [asyncio.create_task(follow_lg(cluster.bases, r, opts.limit)) for r in runs]

    async def effect_done() -> bool:
        return bool(counts(record, "effect"))

    await wait_for(effect_done, opts.limit, step=0.05)
    await asyncio.sleep(rng.uniform(0.0, 1.5))  # strike at a random moment of the runs
    held = await holders(cluster, pg, runs)
    struck = time.monotonic()
    detail = await AEGRA_FAULTS[fault](cast(Any, cluster), pg, rng)
    healed = time.monotonic()
    recovery = await probe(cluster, opts.limit)
    final = await settle(cluster.bases, runs, record, opts.limit)
    settled = time.monotonic()
    await asyncio.wait(followers, timeout=15)
    for task in followers:
        task.cancel()
    out = {"trial": n, "fault": fault, **detail, "held": held, "fault_s": round(healed - struck, 2)}
    out["recovery_s"] = None if recovery is None else round(recovery, 2)
    out["settled_s"] = round(settled - healed, 2)  # from the heal to every run over
    ended = [await read_log(cluster.bases, run) for run in runs]
    out["replays_not_ended"] = ended.count(False)
    if any(final.get(r.key) not in FINAL for r in runs):
        out["stuck_file"] = await _stuck_file(cluster, runs, opts, n)
    out["statuses"] = dict(final)
    out["ticks_repeated_in_log"] = sum(r.ticks_repeated_in_log() for r in runs)
    return out | verdict(list(runs), record, final)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def write(
    opts: Any, results: list[dict[str, Any]], started: dict[str, Any], quiet: bool = False
) -> dict[str, Any]:
    out = {**started, "ended": now_iso(), "uptime_at_end": uptime(), "table": table(results)}
    out["trials"] = results
    folder = Path(opts.out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nemesis-aegra.json").write_text(json.dumps(out, indent=2) + "\n")
    render(out, folder, quiet)
    return out


def render(out: dict[str, Any], folder: Path, quiet: bool = False) -> None:
    """``nemesis-aegra.md`` from what ``write`` saved (``--render`` does it again)."""
    opts, results = argparse.Namespace(**out["options"]), out["trials"]
    lines = [
        f"# Nemesis against Aegra {AEGRA_VERSION}, Redis mode ({out['when']} to {out['ended']})",
        "",
        f"{len(results)} trials of {opts.runs} runs each, seed `{opts.seed}`, faults"
        f" `{opts.faults}`, partitions of {opts.partition_seconds} s; each wait at most"
        f" {opts.limit:.0f} s (`--limit`; Aegra retakes a dead process's runs after its"
        " 30 s lease and 15 s reaper). Aegra at its own clocks and bench/peers.py's pools.",
        f"Machine: {json.dumps(out['machine'])}.",
        f"`uptime` before: {out['uptime_at_start']}; after: {out['uptime_at_end']}.",
        "",
        "| fault | trials | runs | lost | twice | effects twice | inexact streams"
        " | repeats in the log | stuck | not recovered | recovery p50 | recovery p99 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fault, row in out["table"].items():
        cells = [row[k] for k in ("trials", "runs", *COUNTED, "not_recovered")]
        times = [
            f"{row[k]} s" if row[k] is not None else "-"
            for k in ("recovery_p50_s", "recovery_p99_s")
        ]
        lines.append(f"| `{fault}` | " + " | ".join(map(str, cells + times)) + " |")
    lines += ["", *_settled(results), "", *_notes(results)]
    if out.get("aborted"):
        lines += ["", f"The run stopped early: {out['aborted']}"]
    (folder / "nemesis-aegra.md").write_text("\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines))


def _settled(results: list[dict[str, Any]]) -> list[str]:
    """From the heal until every run of the trial is over: where Aegra's lease shows."""
    lines = ["| fault | runs over after the heal: p50 | p99 | max |", "|---|---|---|---|"]
    for fault in sorted({r["fault"] for r in results}):
        times = sorted(r["settled_s"] for r in results if r["fault"] == fault)
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        lines.append(
            f"| `{fault}` | {statistics.median(times):.1f} s | {p99:.1f} s | {times[-1]:.1f} s |"
        )
    return lines


def _notes(results: list[dict[str, Any]]) -> list[str]:
    ticks = sum(r["ticks_repeated_in_log"] for r in results)
    hung = sum(r.get("replays_not_ended", 0) for r in results)
    return [
        "Repeats in the log: event ids Aegra's replay buffer holds twice. Aegra marks no"
        " retry in a run's stream, so a tick there twice (a node that ran again, or an"
        f" event stored twice) is not counted in that column: {ticks} such ticks in all."
        " Each trial's `held` (in the JSON) says how many of its runs each process was"
        " executing when the fault struck.",
        "",
        f"Reads of a finished run's whole stream that did not end within 20 s: {hung}"
        " (Aegra kept them open with keepalives; the part read stands for the log).",
    ]


async def main(opts: Any) -> int:
    with contextlib.ExitStack() as stack:
        link = None if netns.missing() else stack.enter_context(netns.link())
        if link is None and "partition" in opts.faults.split(","):
            raise SystemExit(f"error: the partition needs network namespaces ({netns.missing()})")
        return await deployment(opts, link)


async def deployment(opts: Any, link: netns.Link | None) -> int:
    faults = opts.faults.split(",")
    python = await asyncio.to_thread(ensure_aegra, ARTIFACTS)
    hosts = ("127.0.0.1", link.host_ip) if link else ("127.0.0.1",)
    pg, redis = OwnPostgres(hosts), OwnRedis(hosts)
    await pg.create()
    started = {"when": now_iso(), "machine": machine(), "options": vars(opts)}
    started["uptime_at_start"] = uptime()
    results: list[dict[str, Any]] = []
    stop_at = time.monotonic() + opts.hours * 3600
    cluster = AegraCluster(python, pg.url(), redis, link)
    cluster.partition_s = opts.partition_s
    try:
        await redis.ready()
        await cluster.start("a1")  # it migrates the database first
        await cluster.start("a2")
        for n in range(opts.trials):
            if time.monotonic() > stop_at:
                break
            try:
                result = await trial(n, faults[n % len(faults)], cluster, pg, opts)
            except Exception as exc:  # e.g. an Aegra that does not start again: say so
                started["aborted"] = f"trial {n} ({faults[n % len(faults)]}): {exc!r}"[:2000]
                print(started["aborted"], flush=True)
                break
            results.append(result)
            write(opts, results, started, quiet=True)  # an interrupted run keeps its trials
            print(json.dumps({k: v for k, v in result.items() if k != "inexact"}), flush=True)
    finally:
        cluster.stop()
        redis.remove()
        await pg.remove()
    rows = write(opts, results, started)["table"]
    return 1 if any(row[k] for row in rows.values() for k in COUNTED) else 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--hours", type=float, default=1.0, help="stop after this long")
    p.add_argument("--runs", type=int, default=6, help="runs per trial")
    p.add_argument("--limit", type=float, default=180.0,
                   help="seconds a trial's recovery, and then its runs, may take")  # fmt: skip
    p.add_argument("--faults", default=",".join(AEGRA_FAULTS), help="comma-separated, in turn")
    p.add_argument("--seed", default="nemesis")
    p.add_argument("--partition-seconds", default="5,120", help="the partition's length: min,max")
    p.add_argument("--out", default=str(RESULTS))
    p.add_argument("--render", action="store_true", help="run nothing: rewrite the .md")
    opts = p.parse_args(argv)
    unknown = set(opts.faults.split(",")) - set(AEGRA_FAULTS)
    if unknown:
        p.error(f"unknown faults {sorted(unknown)}; known: {', '.join(AEGRA_FAULTS)}")
    opts.work = tempfile.mkdtemp(prefix="outlast-nemesis-aegra-")
    low, high = (float(x) for x in opts.partition_seconds.split(","))
    opts.partition_s = (low, high)
    return opts


if __name__ == "__main__":
    options = parse()
    if options.render:
        render(
            json.loads((Path(options.out) / "nemesis-aegra.json").read_text()), Path(options.out)
        )
        sys.exit(0)
    sys.exit(asyncio.run(main(options)))
