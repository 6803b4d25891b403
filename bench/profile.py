"""Where a server's time goes: py-spy samples of ``outlast serve`` under a steady load.

    .venv/bin/python bench/profile.py --label now                # the 10-node graph, 10 in flight
    .venv/bin/python bench/profile.py --label now --scenario accept  # POST only, --no-worker
    git worktree add /tmp/base <commit>                              # then, side by side:
    .venv/bin/python bench/profile.py --label ab --repeat 3 --version base=/tmp/base --version new=.

A fresh database, one ``outlast serve`` warmed up, then py-spy attaches to it (100 samples
a second, the process paused for each sample so the stacks are consistent) while the load
runs, and detaches when it ends. Beside the stacks, what the same load cost: runs per
second, CPU of the server and of the Postgres backends per run, and the database's
transactions and written rows per run (``pg_stat_database``, which backends send late but
all of at their exit: they are read once the server stopped, over its whole life, warm-up
included).

Writes ``bench/results/profiles/<label>-<scenario>.{md,json}`` (the figures side by
side, inclusive shares of the parts of the stack this project cares about, the top
functions inclusive and self) and keeps py-spy's raw collapsed stacks in
``.artifacts/profiles/`` (feed them to any flame graph tool). Versions are run in
alternating order, each in its own fresh database, so a comparison is taken in one run.

Inclusive share = the fraction of samples with the function anywhere on the stack; self
share = the fraction with it on top. Idle samples (the event loop waiting in epoll) are
not recorded by py-spy, so shares are of the time the process was on the CPU or blocked
outside the loop's wait.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
from acceptance import burst
from benchkit import RESULTS, CpuMeter, Outlast, now_iso, query, r, temp_database
from overhead import outlast_run, throughput
from streaming import live_once

PROFILES = RESULTS / "profiles"
PY_SPY = str(Path(sys.executable).with_name("py-spy"))
RAW = Path(__file__).resolve().parent.parent / ".artifacts" / "profiles"

# The parts of the stack a fix would target, as (label, regex over "function (file)").
PARTS: list[tuple[str, str]] = [
    ("HTTP requests (uvicorn to the route)", r"^RequestResponseCycle\.run_asgi "),
    ("outlast API routes", r"\(outlast/api/"),
    ("LangGraph Pregel loop", r"\(pregel/"),
    ("checkpoint writes (saver)", r"\(outlast/store/pg_saver\.py|\(postgres/aio\.py"),
    ("event appends (sink)", r"\(outlast/runtime/sink\.py"),
    ("activity lease and heartbeats", r"\(outlast/runtime/activity\.py"),
    ("run execution (outlast runtime)", r"\(outlast/runtime/execution\.py"),
    ("stream translation", r"\(outlast/runtime/translate\.py"),
    ("store: outlast tables", r"\(outlast/store/(postgres|common|rows)\.py"),
    ("pool checkout", r"\(psycopg_pool/"),
    ("pool: connection check", r"check_connection|_check_connection"),
    ("psycopg: all", r"\(psycopg/"),
    (
        "serialization (JSON, msgpack)",
        r"\((json|orjson|ormsgpack)|jsonplus\.py|dumps_typed|loads_typed",
    ),
    ("pydantic", r"\(pydantic"),
    ("logging", r"\(logging/"),
]

_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")


def idle(frames: list[str]) -> bool:
    """A pool thread waiting for work (asyncio.to_thread's, or anyio's behind Starlette's
    run_in_threadpool, which grows with the requests in flight): py-spy counts it as
    active, and it would dilute every share."""
    top = frames[-1]
    if top.startswith("_worker (concurrent/futures/thread.py)"):
        return True
    return top.startswith("Condition.wait (threading.py)") and any(
        f.startswith("WorkerThread.run (anyio/") for f in frames
    )


def short(frame: str) -> str:
    """``fn (.../site-packages/pkg/mod.py:12)`` → ``fn (pkg/mod.py)``: one name per
    function, whatever line of it was sampled."""
    m = _FRAME.match(frame)
    if not m:
        return frame
    path = m["file"]
    for marker in ("site-packages/", "/lib/python3.11/", "/work/main/", "/outlast/../"):
        if marker in path:
            path = path.split(marker, 1)[1]
    if "/outlast/" in path and not path.startswith("outlast/"):
        path = "outlast/" + path.split("/outlast/", 1)[1]
    return f"{m['fn']} ({path})"


def summarize(raw: Path) -> dict[str, Any]:
    total = 0
    inclusive: Counter[str] = Counter()
    self_: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [short(f) for f in stack.split(";")]
        if idle(frames):
            continue  # a thread pool's idle thread: blocked, not working
        total += n
        self_[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
        joined = "\n".join(frames)
        for label, pattern in PARTS:
            if re.search(pattern, joined, re.MULTILINE):
                parts[label] += n
    share = lambda n: r(100 * n / total, 1) if total else 0.0  # noqa: E731
    return {
        "samples": total,
        "parts": {label: share(parts[label]) for label, _ in PARTS},
        "inclusive": [(f, share(n)) for f, n in inclusive.most_common(30)],
        "self": [(f, share(n)) for f, n in self_.most_common(25)],
    }


async def db_counters(db: str) -> dict[str, int]:
    rows = await query(
        db,
        "SELECT xact_commit + xact_rollback, tup_inserted, tup_updated, tup_deleted"
        " FROM pg_stat_database WHERE datname = current_database()",
    )
    xacts, ins, upd, dele = rows[0]
    return {"transactions": xacts, "inserted": ins, "updated": upd, "deleted": dele}


async def profile_once(opts: argparse.Namespace, source: str | None, raw: Path) -> dict[str, Any]:
    """One server (from ``source``, a checkout of outlast, or the installed one) in a
    fresh database: warm-up, then the load under py-spy. What the load cost, per run."""
    env = {"PYTHONPATH": source} if source else None
    async with temp_database(opts.database_url) as db:
        server = Outlast(db, concurrency=opts.inflight, no_worker=opts.scenario != "runs", env=env)
        # the stream scenario profiles the API alone; its runs execute in a worker
        worker = Outlast(db, command="worker", env=env) if opts.scenario == "stream" else None
        extra: dict[str, float] = {}
        try:
            await server.ready()
            if worker is not None:
                await worker.ready()
            limits = httpx.Limits(max_connections=opts.inflight + 10)
            async with httpx.AsyncClient(timeout=120.0, limits=limits) as client:

                async def one() -> str:
                    return await outlast_run(client, server.base)

                async def load(n: int) -> int:
                    """The load; returns how many units (runs, or deliveries) it was."""
                    if opts.scenario == "runs":
                        await throughput(one, n, opts.inflight)
                    elif opts.scenario == "accept":
                        await burst(server.base, opts.clients, n, f"p{time.monotonic_ns()}")
                    else:
                        emit = SimpleNamespace(stream_events=n, stream_interval=0.1)
                        out = await live_once(client, server.base, emit, opts.stream_clients)
                        latency = out["append_to_receipt"]
                        extra["append_to_receipt_p50_ms"] = latency["p50_ms"]
                        extra["append_to_receipt_p99_ms"] = latency["p99_ms"]
                        return int(out["deliveries"])
                    return n

                warm = {"runs": 40, "accept": 500, "stream": 20}[opts.scenario]
                await load(warm)  # warm-up
                await asyncio.sleep(1.5)  # the statistics of the warm-up reach the server
                before = await db_counters(db)
                spy = await asyncio.create_subprocess_exec(
                    *(PY_SPY, "record", "--format", "raw", "--rate", str(opts.rate)),
                    *("--pid", str(server.pid), "-o", str(raw)),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                await asyncio.sleep(1.0)  # py-spy attaches
                meter = CpuMeter({"server": server.pid}, db).start()
                started = time.perf_counter()
                n = await load(opts.runs)
                elapsed = time.perf_counter() - started
                used = meter.stop()
                spy.send_signal(signal.SIGINT)
                _, err = await asyncio.wait_for(spy.communicate(), 60)
                if spy.returncode not in (0, -signal.SIGINT) or not await asyncio.to_thread(
                    raw.exists
                ):
                    raise RuntimeError(f"py-spy failed ({spy.returncode}): {err.decode()}")
                await asyncio.sleep(1.5)
                after = await db_counters(db)
        finally:
            if worker is not None:
                worker.stop()
            server.stop()
        if opts.scenario != "stream":
            # A backend sends its statistics at most once a second and, when it then
            # goes idle, up to 10 s later: counters read while the pool is open miss
            # some of the load and count some of the warm-up (about ±10% of the
            # transactions per run, enough to hide a change). A backend sends them
            # all when it exits, so the whole life of the server (startup, warm-up
            # and load, all runs alike) is counted once it stopped.
            await asyncio.sleep(1.0)
            after = await db_counters(db)
            before = dict.fromkeys(after, 0)
    counted = n if opts.scenario == "stream" else n + warm
    unit = "delivery" if opts.scenario == "stream" else "run"
    return {
        **extra,
        {"run": "runs_per_s", "delivery": "deliveries_per_s"}[unit]: n / elapsed,
        **{f"cpu_ms_per_{unit}_{k}": 1000 * v / n for k, v in used.items()},
        **{f"{k}_per_{unit}": (after[k] - before[k]) / counted for k in before},
    }


def versions_of(opts: argparse.Namespace) -> dict[str, str | None]:
    """``--version label=dir`` → label: absolute folder (None: the installed outlast)."""
    versions: dict[str, str | None] = {}
    for spec in opts.version or [f"{opts.label}="]:
        label, _, source = spec.partition("=")
        versions[label] = str(Path(source).resolve()) if source else None
    return versions


async def profile(opts: argparse.Namespace) -> dict[str, Any]:
    """Every version ``--repeat`` times, in alternating order (ABBA...), so that the
    machine's drift and its other tenants weigh on each alike; figures are medians over
    the repetitions, the stacks of all repetitions are summarized together."""
    RAW.mkdir(parents=True, exist_ok=True)
    versions = versions_of(opts)
    figures: dict[str, list[dict[str, float]]] = {v: [] for v in versions}
    raws: dict[str, list[Path]] = {v: [] for v in versions}
    for rep in range(opts.repeat):
        order = list(versions) if rep % 2 == 0 else list(reversed(versions))
        for label in order:
            raw = RAW / f"{opts.label}-{label}-{opts.scenario}-{rep}.collapsed"
            figures[label].append(await profile_once(opts, versions[label], raw))
            raws[label].append(raw)
            rate = next(v for k, v in figures[label][-1].items() if k.endswith("_per_s"))
            print(f"  {label} {rep + 1}/{opts.repeat}: {rate:.1f}/s")
    out: dict[str, Any] = {
        "scenario": opts.scenario,
        "when": now_iso(),
        "load_average_at_start": [r(x) for x in os.getloadavg()],
        "runs": opts.runs,
        "in_flight": {"runs": opts.inflight, "accept": opts.clients, "stream": 1}[opts.scenario],
        "repeat": opts.repeat,
        "rate": opts.rate,
        "versions": {},
    }
    for label, reps in figures.items():
        merged = RAW / f"{opts.label}-{label}-{opts.scenario}.collapsed"
        merged.write_text("".join(p.read_text() for p in raws[label]))
        out["versions"][label] = {
            "source": versions[label] or "installed",
            "figures": {k: r(statistics.median(x[k] for x in reps), 2) for k in reps[0]},
            "all": reps,
            "profile": summarize(merged),
            "raw": str(merged.relative_to(RAW.parent.parent)),
        }
    return out


def markdown(res: dict[str, Any]) -> str:
    vs = res["versions"]
    what = {
        "runs": "runs of the 10-node graph",
        "accept": "accepted runs",
        "stream": "events to 100 SSE clients",
    }[res["scenario"]]
    lines = [
        f"# Profile of `outlast serve`, {res['scenario']}: {', '.join(vs)} ({res['when']})",
        "",
        f"{res['runs']} {what} at {res['in_flight']} in flight per repetition, "
        f"{res['repeat']} repetitions in alternating order; medians. Load average at the "
        f"start {res['load_average_at_start']}. py-spy at {res['rate']} samples/s.",
        "",
        "| | " + " | ".join(f"`{v}`" for v in vs) + " |",
        "|---" * (len(vs) + 1) + "|",
    ]
    first = next(iter(vs.values()))
    for key in first["figures"]:
        cells = " | ".join(str(v["figures"][key]) for v in vs.values())
        lines.append(f"| {key} | {cells} |")
    cells = " | ".join(str(v["profile"]["samples"]) for v in vs.values())
    lines.append(f"| py-spy samples (idle pool threads left out) | {cells} |")
    # Sampled time per unit of load: comparable across loads where shares are not (a
    # part whose share holds while the total grows costs more per run).
    per = 1000 / res["rate"] / (res["runs"] * res["repeat"])
    cells = " | ".join(str(r(v["profile"]["samples"] * per, 2)) for v in vs.values())
    lines.append(f"| sampled ms per run (stream: per event emitted) | {cells} |")
    for label, _ in PARTS:
        cells = " | ".join(str(v["profile"]["parts"][label]) for v in vs.values())
        lines.append(f"| % of samples: {label} | {cells} |")
    for name, v in vs.items():
        p = v["profile"]
        lines += ["", f"## `{name}` ({v['source']}; raw stacks `{v['raw']}`)", ""]
        lines += ["| function (inclusive) | % |", "|---|---|"]
        lines += [f"| `{f}` | {x} |" for f, x in p["inclusive"]]
        lines += ["", "| function (self) | % |", "|---|---|"]
        lines += [f"| `{f}` | {x} |" for f, x in p["self"]]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default="now", help="names the result files")
    ap.add_argument(
        "--version",
        action="append",
        metavar="LABEL=DIR",
        help="a version to profile: a label and a checkout of outlast (run from that "
        "folder through PYTHONPATH; empty = the installed one); repeat to compare",
    )
    ap.add_argument(
        "--scenario",
        choices=("runs", "accept", "stream"),
        default="runs",
        help="runs: the 10-node graph end to end; accept: POST only (--no-worker); stream: "
        "the API fanning one run's events out to --stream-clients (per-run figures are "
        "then per delivery)",
    )
    ap.add_argument(
        "--runs", type=int, default=400, help="runs (POSTs; events for stream) while sampling"
    )
    ap.add_argument("--stream-clients", type=int, default=100, help="stream: SSE clients")
    ap.add_argument("--repeat", type=int, default=1, help="repetitions of each version")
    ap.add_argument("--inflight", type=int, default=10, help="runs: in flight at a time")
    ap.add_argument("--clients", type=int, default=32, help="accept: concurrent clients")
    ap.add_argument("--rate", type=int, default=100, help="py-spy samples per second")
    ap.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    return ap.parse_args(argv)


async def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    res = await profile(opts)
    PROFILES.mkdir(parents=True, exist_ok=True)
    stem = PROFILES / f"{opts.label}-{opts.scenario}"
    stem.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    text = markdown(res)
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
