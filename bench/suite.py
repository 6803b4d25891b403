"""The benchmark suite: every measurement of outlast in one command, next to its aim.

    .venv/bin/python bench/suite.py            # defaults: about 12 minutes on 2 cores
    .venv/bin/python bench/suite.py --quick    # a smoke run of about 3 minutes
    .venv/bin/python bench/suite.py --only stream,recovery --repeat 5

Results go to bench/results/suite.json (every figure, every repetition) and
bench/results/suite.md (the table). Each measurement lives in its own module, whose
docstring says what it measures and why that way:

    overhead    overhead.py     outlast vs plain ``ainvoke`` + AsyncPostgresSaver, one at a time
    throughput  throughput.py   runs/s at 10 and 50 in flight, outlast vs ``langgraph dev``
    lgface      lg_face.py      the LangGraph face vs the native API (and ``langgraph dev``)
    accept      acceptance.py   ``POST /v1/runs`` per second, 32 clients, ``--no-worker``
    stream      streaming.py    append → receipt with 100 SSE clients; replay of 10,000 events
    parked      parking.py      worker RSS/CPU with 10,000 runs waiting on people; answer latency
    recovery    recovery.py     SIGKILL of a worker holding 50 runs → all running elsewhere
    storage     storage.py      bytes per run and step in Postgres; what retention reclaims
    protocol    protocol_v2.py  LangGraph's thread protocol v2 vs ``langgraph dev``: first event,
                                resume with ``since`` (cut, SIGKILL), 1,000 subscribers

Each measurement gets a fresh temporary database (created next to ``--database-url``,
dropped afterwards) and its own server processes. Every figure is a median over
``--repeat`` repetitions (or over many samples where a repetition would cost minutes:
the parked runs), and every comparison is measured side by side in the same run. A
measurement that fails is reported as not measured, with its error, and the rest go on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import acceptance
import benchkit
import httpx
import lg_face
import overhead
import parking
import protocol_report
import protocol_v2
import recovery
import storage
import streaming
import throughput
from benchkit import RESULTS, CpuMeter, Outlast, latency_summary, med, r, temp_database

SIZES: list[benchkit.Size] = [
    ("repeat", 3, 1, "repetitions of each measurement; figures are their medians"),
    ("samples", 50, 30, "overhead: latency samples per repetition, for each side"),
    ("warmup", 10, 5, "overhead: warm-up runs per side, not counted"),
    ("throughput_runs", 100, 60, "throughput: runs per repetition and level"),
    ("lgface_samples", 50, 20, "lgface: latency samples per face and repetition"),
    ("lgface_dev_samples", 10, 5, "lgface: latency samples of the dev server (1 s each)"),
    ("lgface_runs", 100, 50, "lgface: runs per system and repetition at 10 in flight"),
    ("accept_requests", 3000, 1000, "accept: requests per repetition"),
    ("accept_clients", 32, 32, "accept: concurrent clients"),
    ("stream_clients", 100, 100, "stream: SSE clients attached to the run"),
    ("stream_few", 10, 10, "stream: clients of the one extra pass with few"),
    ("stream_events", 150, 50, "stream: custom events the run emits"),
    ("stream_interval", 0.1, 0.1, "stream: seconds between two events"),
    ("replay_events", 10_000, 10_000, "stream: stored events one client replays"),
    ("parked", 10_000, 1000, "parked: runs waiting on a person"),
    ("park_concurrency", 20, 20, "parked: the worker's --concurrency"),
    ("idle_seconds", 10.0, 5.0, "parked: seconds of idle sampling, each state"),
    ("answers", 20, 10, "parked: runs answered one by one for the answer latency"),
    ("recovery_runs", 50, 50, "recovery: runs the killed worker holds"),
    ("lease_ttl", 5.0, 5.0, "recovery: OUTLAST_WORKER_LEASE_TTL, seconds"),
    ("storage_runs", 300, 100, "storage: runs of the 10-node graph"),
    ("prune_keep", 1, 1, "storage: retention keeps this many events per run"),
    *protocol_v2.SIZES,
]
SECTIONS = (
    "overhead",
    "throughput",
    "lgface",
    "accept",
    "stream",
    "parked",
    "recovery",
    "storage",
    "protocol",
)

AIMS = {
    "overhead": "≤ 1.3×",
    "throughput": "≥ 5× the dev server at 10 in flight",
    "lgface": "≤ 1.10× native",
    "accept": "≥ 1,000 runs/s",
    "stream": "p99 < 25 ms with 100 clients",
    "parked": "~0 bytes per parked run (< 1 KiB)",
    "recovery": "≤ lease TTL + 2 s",
    "protocol": "first event ≤ 1.2× the dev server",
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--database-url", default=benchkit.ADMIN_URL, help="admin connection")
    p.add_argument("--quick", action="store_true", help="small sizes, one repetition (~3 min)")
    p.add_argument("--only", help=f"comma-separated subset of: {', '.join(SECTIONS)}")
    p.add_argument("--levels", default="10,50", help="throughput: runs in flight, comma-separated")
    p.add_argument(
        "--render",
        action="store_true",
        help="measure nothing: rewrite suite.md from suite.json (after editing the report)",
    )
    benchkit.add_sizes(p, SIZES)
    args = p.parse_args(argv)
    benchkit.apply_sizes(args, SIZES)
    args.levels = [int(x) for x in args.levels.split(",")]
    args.only = args.only.split(",") if args.only else list(SECTIONS)
    unknown = set(args.only) - set(SECTIONS)
    if unknown:
        p.error(f"unknown measurement(s): {', '.join(sorted(unknown))}")
    return args


async def measure_overhead(opts: Any, admin_url: str) -> dict[str, Any]:
    """The 10-node graph one run at a time: plain ``ainvoke`` with AsyncPostgresSaver (a)
    against ``POST /v1/runs`` → ``result?wait`` on ``outlast serve`` (b), on the same
    database, in turn in blocks with the contract's writes alone (e, overhead.floor_runner),
    the floor (b) cannot go below. Each repetition gives ratios of medians; the figures
    are the median ratios."""
    reps = []
    async with temp_database(admin_url) as db:
        server = Outlast(db, concurrency=10)
        try:
            await server.ready()
            async with (
                httpx.AsyncClient(timeout=60.0) as client,
                overhead.direct_runner(db, 10) as direct,
                overhead.floor_runner(db) as floor,
            ):

                async def served() -> str:
                    return await overhead.outlast_run(client, server.base)

                for rep in range(opts.repeat):
                    warm = opts.warmup if rep == 0 else 2
                    a, b, e = await overhead.alternate_many(
                        [direct, served, floor], opts.samples, warm
                    )
                    reps.append(
                        {
                            "direct": latency_summary(a),
                            "outlast": latency_summary(b),
                            "floor": latency_summary(e),
                            "ratio": r(med(b) / med(a), 3),
                            "floor_ratio": r(med(e) / med(a), 3),
                        }
                    )
                    print(
                        f"  overhead {rep + 1}/{opts.repeat}: direct {med(a):.1f} ms, "
                        f"outlast {med(b):.1f} ms, ratio {reps[-1]['ratio']:.2f}×, "
                        f"floor {med(e):.1f} ms = {reps[-1]['floor_ratio']:.2f}×"
                    )
                # CPU per run, which the machine's noise moves less than latency: the direct
                # runs execute in this process ("client"), outlast's in the server.
                cpu = {}
                for name, fn, pids in (
                    ("direct", direct, {}),
                    ("outlast", served, {"server": server.pid}),
                ):
                    meter = CpuMeter(pids, db).start()
                    for _ in range(opts.samples):
                        await fn()
                    cpu[name] = {k: r(1000 * v / opts.samples) for k, v in meter.stop().items()}
                print(f"  overhead: CPU ms per run {cpu}")
        finally:
            server.stop()
    return {
        "direct_ms": r(med([x["direct"]["p50_ms"] for x in reps])),
        "outlast_ms": r(med([x["outlast"]["p50_ms"] for x in reps])),
        "ratio": r(med([x["ratio"] for x in reps])),
        "all_ratios": [x["ratio"] for x in reps],
        "floor_ms": r(med([x["floor"]["p50_ms"] for x in reps])),
        "floor_ratio": r(med([x["floor_ratio"] for x in reps])),
        "cpu_ms_per_run": cpu,
        "samples_per_repetition": opts.samples,
        "repetitions": reps,
    }


MEASURE: dict[str, Callable[[Any, str], Awaitable[dict[str, Any]]]] = {
    "overhead": measure_overhead,
    "throughput": throughput.measure,
    "lgface": lg_face.measure,
    "accept": acceptance.measure,
    "stream": streaming.measure,
    "parked": parking.measure,
    "recovery": recovery.measure,
    "storage": storage.measure,
    "protocol": protocol_v2.measure_and_write,  # also writes protocol.json and protocol.md
}


# -- the report --------------------------------------------------------------------------


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("**yes**" if ok else "no")


def rows(res: dict[str, Any], opts: Any) -> list[tuple[str, str, str, str, str]]:
    """(measurement, outlast, compared with / beside, aim, met) for each figure."""
    out: list[tuple[str, str, str, str, str]] = []

    def missing(name: str) -> bool:
        section = res.get(name)
        if section is None:
            return True
        if "error" in section:
            out.append((name, "not measured", f"`{section['error']}`", AIMS.get(name, ""), "—"))
            return True
        return False

    if not missing("overhead"):
        o = res["overhead"]
        plain, ours = o["cpu_ms_per_run"]["direct"], o["cpu_ms_per_run"]["outlast"]
        out.append(
            (
                "overhead, 10-node graph, one at a time",
                f"{o['outlast_ms']:.1f} ms/run = **{o['ratio']:.2f}×**",
                f"plain `ainvoke` + AsyncPostgresSaver: {o['direct_ms']:.1f} ms/run; "
                f"ratios {o['all_ratios']}; CPU per run: plain {plain['client']:.1f} ms + "
                f"Postgres {plain['postgres']:.1f} ms, outlast server {ours['server']:.1f} ms + "
                f"Postgres {ours['postgres']:.1f} ms + client {ours['client']:.1f} ms"
                + (
                    f"; the contract's writes alone (no server): {o['floor_ms']:.1f} ms = "
                    f"{o['floor_ratio']:.2f}×, the floor of this ratio"
                    if "floor_ratio" in o
                    else ""
                ),
                AIMS["overhead"],
                verdict(o["ratio"] <= 1.3),
            )
        )
    if not missing("throughput"):
        t = res["throughput"]
        alone, cpu = t["one_run_alone_ms"], t["cpu_ms_per_run"]
        for i, (n, level) in enumerate(t["levels"].items()):
            beside = (
                f"; one run alone: outlast {alone['outlast']:.0f} ms, dev server "
                f"{alone['dev']:.0f} ms; CPU per run: outlast {cpu['outlast_server']:.1f} ms "
                f"+ Postgres {cpu['outlast_postgres']:.1f} ms, dev server "
                f"{cpu['dev_server']:.1f} ms"
                if i == 0
                else ""
            )
            out.append(
                (
                    f"throughput, {n} in flight",
                    f"{level['outlast_runs_per_s']:.1f} runs/s = **{level['ratio']:.2f}×**",
                    f"`langgraph dev`: {level['dev_runs_per_s']:.1f} runs/s{beside}",
                    AIMS["throughput"] if i == 0 else "",
                    verdict(level["ratio"] >= 5) if i == 0 else "—",
                )
            )
    if not missing("lgface"):
        g, q, met = res["lgface"], res["lgface"]["ratios"], res["lgface"]["met"]
        lg, nat, dev = g["lg"], g["native"], g["dev"]
        cpu = {s: lg_face.cpu_cell(g[s]["cpu_ms_per_run_10"]) for s in lg_face.SYSTEMS}
        out += [
            (
                "LangGraph face (`langgraph_sdk` `runs.wait`), 10-node graph, one at a time",
                f"{lg['p50_ms']:.1f} ms/run = **{q['lg_over_native_p50_ms']:.2f}× native**",
                f"native (`POST /v1/runs` → `result?wait`, httpx) {nat['p50_ms']:.1f} ms; "
                f"p99 {lg['p99_ms']:.1f} vs {nat['p99_ms']:.1f} ms "
                f"({q['lg_over_native_p99_ms']:.2f}×); `langgraph dev` {dev['p50_ms']:.0f} ms",
                "≤ 1.10× native",
                verdict(met["p50_ms"]),
            ),
            (
                f"LangGraph face, {g['in_flight']} in flight",
                f"{lg['runs_per_s']:.1f} runs/s = **{q['lg_over_native_runs_per_s']:.2f}× native**",
                f"native {nat['runs_per_s']:.1f} runs/s, `langgraph dev` {dev['runs_per_s']:.1f}"
                f" runs/s (LG face {q['lg_over_dev_runs_per_s']:.1f}× dev)",
                "≥ 0.91× native",
                verdict(met["runs_per_s"]),
            ),
            (
                f"LangGraph face, CPU per run at {g['in_flight']} in flight",
                f"{cpu['lg']} ms = **{q['lg_over_native_cpu_10']:.2f}× native**",
                f"server + Postgres: native {cpu['native']} ms, `langgraph dev` {cpu['dev']} "
                f"ms; one at a time {q['lg_over_native_cpu_1']:.2f}× native",
                "≤ 1.10× native",
                verdict(met["cpu_10"]),
            ),
        ]
    if not missing("accept"):
        a = res["accept"]
        out.append(
            (
                f"accept, {a['clients']} clients, `--no-worker`",
                f"**{a['runs_per_s']:.0f} runs/s**",
                f"latency p50 {a['p50_ms']:.1f} ms, p99 {a['p99_ms']:.1f} ms; CPU per run: "
                f"server {a['cpu_ms_per_accept']['server']:.2f} ms, Postgres "
                f"{a['cpu_ms_per_accept']['postgres']:.2f} ms, client "
                f"{a['cpu_ms_per_accept']['client']:.2f} ms",
                AIMS["accept"],
                verdict(a["runs_per_s"] >= 1000),
            )
        )
        if "two_processes_runs_per_s" in a:
            out.append(
                (
                    f"accept, {a['clients']} clients over two `outlast serve --no-worker`",
                    f"**{a['two_processes_runs_per_s']:.0f} runs/s**",
                    f"all {a['two_processes_all']}; the scale-out deployment, same database",
                    AIMS["accept"],
                    verdict(a["two_processes_runs_per_s"] >= 1000),
                )
            )
    if not missing("stream"):
        s = res["stream"]
        few = s["few_clients"]
        rate = s["clients"] / s["interval_s"]
        out.append(
            (
                f"stream, append → receipt, {s['clients']} clients, "
                f"{1 / s['interval_s']:g} events/s",
                f"p50 {s['append_to_receipt_p50_ms']:.1f} ms, "
                f"**p99 {s['append_to_receipt_p99_ms']:.1f} ms**",
                f"from the node's emit: p50 {s['emit_to_receipt_p50_ms']:.1f} ms, "
                f"p99 {s['emit_to_receipt_p99_ms']:.1f} ms; {rate:,.0f} deliveries/s cost "
                f"the API {s['cpu_ms_per_delivery']['api']:.2f} ms CPU each; with "
                f"{few['clients']} clients (once): p50 {few['append_to_receipt']['p50_ms']:.1f} "
                f"ms, p99 {few['append_to_receipt']['p99_ms']:.1f} ms",
                AIMS["stream"],
                verdict(s["append_to_receipt_p99_ms"] < 25),
            )
        )
        out.append(
            (
                f"replay of {s['replay_events']:,} stored events, one client",
                f"**{s['replay_events_per_s']:,.0f} events/s**",
                f"all {s['replay_all_events_per_s']}",
                "",
                "—",
            )
        )
    if not missing("parked"):
        p = res["parked"]
        tenth = p["idle_tenth_parked"]
        out.append(
            (
                f"parked: worker RSS, {p['parked']:,} runs waiting on people",
                f"**{p['rss_bytes_per_parked_run_slope']:,.0f} B/run** between "
                f"{tenth['runs']:,} and {p['parked']:,} parked",
                f"RSS {p['idle_0_runs']['rss_mib']:.1f} MiB with 0 parked → "
                f"{tenth['rss_mib']:.1f} → {p['idle_parked']['rss_mib']:.1f} MiB "
                f"({p['rss_bytes_per_parked_run']:,.0f} B/run overall); worker CPU idle "
                f"{p['idle_0_runs']['worker_cpu_percent']:.1f}% → "
                f"{p['idle_parked']['worker_cpu_percent']:.1f}% with all parked",
                AIMS["parked"],
                verdict(p["rss_bytes_per_parked_run_slope"] < 1024),
            )
        )
        out.append(
            (
                f"parked: answer → next event (median of {p['answers']})",
                f"**{p['answer_to_next_event_p50_ms']:.1f} ms**",
                f"→ `run.started` {p['answer_to_run_started_p50_ms']:.1f} ms, "
                f"→ `run.completed` {p['answer_to_completed_p50_ms']:.1f} ms",
                "",
                "—",
            )
        )
    if not missing("recovery"):
        c = res["recovery"]
        aim = c["lease_ttl_s"] + 2
        out.append(
            (
                f"recovery: SIGKILL → {c['runs']} runs running again",
                f"**{c['recovered_s']:.2f} s** (worst {c['recovered_worst_s']:.2f} s)",
                f"lease TTL {c['lease_ttl_s']:g} s; leases ran out after "
                f"{c['leases_expired_after_s']:.2f} s, requeued after "
                f"{c['requeued_after_s']:.2f} s",
                f"≤ {aim:g} s",
                verdict(c["recovered_worst_s"] <= aim),
            )
        )
    if not missing("storage"):
        g = res["storage"]
        out.append(
            (
                "storage per run of the 10-node graph",
                f"**{g['live_kib_per_run']:.1f} KiB/run**, {g['live_kib_per_step']:.2f} KiB/step",
                f"outlast tables {g['outlast_tables_live_kib_per_run']:.1f} KiB, checkpoints "
                f"{g['checkpoint_tables_live_kib_per_run']:.1f} KiB; as written (dead rows "
                f"included) {g['written_kib_per_run']:.1f} KiB",
                "",
                "—",
            )
        )
        k = g["retention"]
        out.append(
            (
                f"retention, `prune(keep={k['keep']})`",
                f"**{k['reclaimed_kib_per_run']:.1f} KiB/run** reclaimed",
                f"{k['events_deleted_per_run']:.0f} events/run deleted; left "
                f"{k['after_vacuum_full_kib_per_run']:.1f} KiB/run after VACUUM FULL, "
                f"{k['after_vacuum_kib_per_run']:.1f} after plain VACUUM",
                "",
                "—",
            )
        )
    if not missing("protocol"):
        out += protocol_report.suite_rows(res["protocol"])
    return out


def markdown(res: dict[str, Any], opts: Any) -> str:
    m = res["machine"]
    lines = [
        "# outlast benchmark suite",
        "",
        f"{res['date']}; {m['platform']}, {m['cpus']} CPUs (load average at start "
        f"{m['load_average_at_start']}, at the end {res.get('load_average_at_end')}: other "
        f"tenants share the machine), Python {m['python']}, langgraph {m['langgraph']}, "
        f"langgraph-api {m['langgraph_api']}; Postgres on the same host. "
        f"{'`--quick`, ' if opts.quick else ''}median of {opts.repeat} repetition(s) unless "
        f"said otherwise; total {res['total_seconds']:.0f} s.",
        "",
        "| measurement | outlast | compared with / beside | aim | met |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {' | '.join(row)} |" for row in rows(res, opts)]
    lines += ["", "## How each figure was taken", ""]
    lines += [
        f"- **{name}** ({res['seconds'].get(name, 0):.0f} s): {notes(opts)[name]}"
        for name in res["order"]
    ]
    lines += [
        "",
        "Every outlast process ran with the per-principal limits off "
        "(`OUTLAST_RATE_LIMIT=0`, `OUTLAST_MAX_RUNS_IN_FLIGHT=0`, `OUTLAST_MAX_STREAMS=10000`), "
        "`OUTLAST_POOL_MAX_SIZE=20` and `OUTLAST_EVENT_RETENTION_COUNT=1000000`. "
        "All figures and every repetition are in `suite.json`.",
    ]
    return "\n".join(lines) + "\n"


def notes(o: Any) -> dict[str, str]:
    """How each figure was taken, in one sentence or three, for the markdown."""
    top = max(o.levels)
    return {
        "overhead": "one run at a time, plain `graph.ainvoke(durability='sync')` on "
        "AsyncPostgresSaver against `POST /v1/runs` → `GET result?wait` on `outlast serve`, "
        f"same database, alternating in blocks of 10, {o.samples} samples each per "
        "repetition; ratio of medians per repetition, median over repetitions. The floor: "
        "plain `ainvoke` plus the writes the contract asks of a run (accept and claim in one "
        "transaction, every checkpoint fenced by the lease with a `node.updated` per step "
        "carried in it, the finish, the result read), in-process, in the same rotation.",
        "throughput": f"completed runs/s, {o.throughput_runs} runs per repetition and level; "
        f"outlast: `outlast serve --concurrency {top}`, POST then `result?wait`; dev server: "
        f"`langgraph dev --n-jobs-per-worker {top}` (in-memory runtime), `client.runs.wait` "
        "threadless through `langgraph_sdk`; both up at once, alternated per repetition; "
        "ratio = median of per-repetition ratios.",
        "lgface": lg_face.notes(o),
        "accept": f"{o.accept_requests} requests per repetition, closed loop: each client one "
        "keep-alive connection and a new `Idempotency-Key` per request (a lean HTTP client, "
        "so the client's CPU stays small); rate = requests / wall time; p50/p99 per "
        "repetition, median over repetitions. Two processes: the same load with the clients "
        "split between two API processes on the same database, right after the single one "
        "in each repetition.",
        "stream": f"API and worker as two processes; {o.stream_clients} clients attach to a "
        f"parked `emitter` run, then it emits {o.stream_events} events "
        f"{1000 * o.stream_interval:g} ms apart (outlast coalesces model tokens into at most "
        "one event per `OUTLAST_MESSAGE_FLUSH_INTERVAL`, 0.1 s); append → receipt uses the "
        "envelope `time` (database clock at insert); p50/p99 over all deliveries of a "
        f"repetition, median over repetitions. Replay: {o.replay_events:,} events written "
        "through the store API, one client reads `?after=0` to the end.",
        "parked": "`outlast worker --concurrency "
        f"{o.park_concurrency}` RSS (median of samples every 0.5 s over {o.idle_seconds:g} s) "
        "and CPU, warmed up and idle, then with a tenth and with all runs `waiting`; the aim "
        "is judged on the slope between a tenth and all (the overall difference also holds "
        "the allocator's one-time high water). Measured once (no repetitions). "
        f"{o.answers} answers one at a time, each with its stream attached first.",
        "recovery": f"`OUTLAST_WORKER_LEASE_TTL={o.lease_ttl:g}`, `OUTLAST_WORKER_HEARTBEAT="
        f"{o.lease_ttl / 3:.3g}`, `OUTLAST_REAPER_INTERVAL=0.5` for this measurement; kill → "
        "the last `run.started` with attempt 2 (database clock); the second worker is up and "
        "idle before the kill; worst = the slowest repetition.",
        "storage": f"{o.storage_runs} runs; `pg_total_relation_size` of `outlast_*` and "
        "`checkpoint*` tables; live = after VACUUM FULL (compact), as written = before any "
        "vacuum (dead row versions of updated rows included); retention = the store's "
        "`prune()` then VACUUM FULL (space returned to the file system); a plain VACUUM "
        "returns nothing but empty tail pages and adds free-space and visibility maps, so "
        "its figure can be larger than before.",
        "protocol": protocol_report.notes(vars(o)),
    }


def describe(exc: BaseException) -> str:
    """The first real error inside task groups, in one line for the table."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").replace("|", "/").replace("`", "'")
    return text[:300]


def write(res: dict[str, Any], opts: Any) -> str:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "suite.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    table = markdown(res, opts)
    (RESULTS / "suite.md").write_text(table)
    return table


async def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    if opts.render:
        res = json.loads((RESULTS / "suite.json").read_text())
        print(write(res, argparse.Namespace(**res["config"])))
        return
    started = time.monotonic()
    res: dict[str, Any] = {
        "date": benchkit.now_iso(),
        "machine": benchkit.machine(),
        "config": {k: v for k, v in vars(opts).items() if k != "database_url"},
        "order": [],
        "seconds": {},
    }
    for name in SECTIONS:
        if name not in opts.only:
            continue
        print(f"{name}…", flush=True)
        section_start = time.monotonic()
        try:
            res[name] = await MEASURE[name](opts, opts.database_url)
        except Exception as exc:
            traceback.print_exc()
            res[name] = {"error": describe(exc)}
        res["seconds"][name] = r(time.monotonic() - section_start, 1)
        res["order"].append(name)
        res["total_seconds"] = r(time.monotonic() - started, 1)
        res["load_average_at_end"] = [r(x) for x in os.getloadavg()]
        write(res, opts)  # after each measurement, so an interrupted run keeps what it has
        print(f"{name}: {res['seconds'][name]:.0f} s", flush=True)
    print("\n" + write(res, opts))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
