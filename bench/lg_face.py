"""What does outlast's LangGraph face cost over its native API? The 10-node graph three ways.

(a) LangGraph face  ``outlast serve`` (Postgres, a fresh database), each run
                    ``client.runs.wait(None, "ten", input=...)`` through ``langgraph_sdk``:
                    ``POST /runs/wait``, a threadless run created and joined in one request.
(b) native face     the same server, each run ``POST /v1/runs`` then
                    ``GET /v1/runs/{id}/result?wait=30`` through httpx (the SDK cannot speak
                    ``/v1``); the SDK is itself an httpx client, so the clients cost alike.
(c) langgraph dev   LangGraph's in-memory runtime, the same SDK call as (a).

All three are up at once and measured in alternation, so drift and the machine's other
tenants hit them alike. One run at a time, in blocks of ten runs per system (the order
rotating from block to block, a pause after each): median and p99 latency. Then
``--runs`` runs at 10 in flight on each, the order rotating per repetition: completed runs
per second. Beside both, the CPU a run cost the server process and the Postgres backends
of the benchmark's database (``/proc``; a block's meter stops after its pause, so the
server's after-run work is counted). Figures are medians over ``--repeat`` repetitions;
a ratio is the median of the per-repetition ratios. The aim: the LangGraph face costs at
most 10 % more than the native one (latency and CPU ≤ 1.10×, rate ≥ 1/1.1 = 0.91×).

``langgraph dev`` takes about a second per run whatever the graph (its in-memory queue
polls every 0.5 s when idle, see bench/README.md), so it gets ``--dev-samples`` latency samples,
fewer than outlast's faces, spread over the same blocks.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from benchkit import (
    ADMIN_URL,
    RESULTS,
    CpuMeter,
    DevServer,
    Outlast,
    machine,
    med,
    now_iso,
    pct,
    r,
    temp_database,
)
from langgraph_sdk import get_client
from overhead import INPUT, outlast_run, throughput, timed

SYSTEMS = ("lg", "native", "dev")
BLOCK = 10  # latency samples of the outlast faces per block
INFLIGHT = 10
PARTS = ("server", "postgres", "client")
KEYS = ("p50_ms", "p99_ms", "runs_per_s", "cpu_1", "cpu_10")
AIM = {"p50_ms": "≤ 1.10×", "runs_per_s": "≥ 0.91×", "cpu_10": "≤ 1.10×"}
Run = Callable[[], Awaitable[str]]


def sdk_run(sdk: Any) -> Run:
    async def run() -> str:
        out = await sdk.runs.wait(None, "ten", input=dict(INPUT))
        ok = isinstance(out, dict) and len(out.get("steps", [])) == 10
        return "completed" if ok else f"bad result {out}"

    return run


def share(total: int, k: int, blocks: int) -> int:
    """Block ``k``'s part of ``total`` samples spread evenly over ``blocks`` blocks."""
    return total * (k + 1) // blocks - total * k // blocks


def rotated(rep: int) -> list[str]:
    return list(SYSTEMS[rep % 3 :] + SYSTEMS[: rep % 3])


async def one_repetition(
    rep: int, opts: Any, systems: dict[str, Run], meters: dict[str, Callable[[], CpuMeter]]
) -> dict[str, Any]:
    """Latency one at a time in rotating blocks, then runs/s at ``INFLIGHT`` in flight."""
    blocks = max(1, -(-opts.lgface_samples // BLOCK))
    wanted = dict.fromkeys(SYSTEMS, opts.lgface_samples) | {"dev": opts.lgface_dev_samples}
    ms: dict[str, list[float]] = defaultdict(list)
    cpu1: dict[str, dict[str, float]] = {s: dict.fromkeys(PARTS, 0.0) for s in SYSTEMS}
    for k in range(blocks):
        for name in rotated(rep * blocks + k):
            n = share(wanted[name], k, blocks)
            if n == 0:
                continue
            meter = meters[name]().start()
            ms[name] += [await timed(systems[name]) for _ in range(n)]
            await asyncio.sleep(0.2)  # the server's after-run work stays in its own block
            for part, used in meter.stop().items():
                cpu1[name][part] += used
    out: dict[str, Any] = {}
    for name in SYSTEMS:
        out[name] = {
            "p50_ms": r(med(ms[name])),
            "p99_ms": r(pct(ms[name], 99)),
            "samples": len(ms[name]),
            "cpu_ms_per_run_1": {p: r(1000 * v / len(ms[name])) for p, v in cpu1[name].items()},
        }
    for name in rotated(rep):
        meter = meters[name]().start()
        rate = await throughput(systems[name], opts.lgface_runs, INFLIGHT)
        used = meter.stop()
        out[name]["runs_per_s"] = r(rate)
        per_run = {p: r(1000 * used.get(p, 0.0) / opts.lgface_runs) for p in PARTS}
        out[name]["cpu_ms_per_run_10"] = per_run
    return out


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    """Every repetition of all three systems, side by side; figures and ratios."""
    async with temp_database(admin_url) as db:
        server = Outlast(db, concurrency=INFLIGHT)
        dev = DevServer(["ten"], jobs=INFLIGHT)
        reps: list[dict[str, Any]] = []
        try:
            await asyncio.gather(server.ready(), dev.ready())
            limits = httpx.Limits(max_connections=INFLIGHT + 10)
            async with (
                httpx.AsyncClient(timeout=120.0, limits=limits) as client,
                get_client(url=server.base, api_key=None, timeout=120.0) as lg_sdk,
                get_client(url=dev.base, api_key=None, timeout=120.0) as dev_sdk,
            ):
                systems: dict[str, Run] = {
                    "lg": sdk_run(lg_sdk),
                    "native": functools.partial(outlast_run, client, server.base),
                    "dev": sdk_run(dev_sdk),
                }
                meters = {  # the dev server has no Postgres backends
                    "lg": functools.partial(CpuMeter, {"server": server.pid}, db),
                    "native": functools.partial(CpuMeter, {"server": server.pid}, db),
                    "dev": functools.partial(CpuMeter, {"server": dev.pid}),
                }
                for name, fn in systems.items():  # warm-up: imports, pools, first compiles
                    await throughput(fn, 4 * INFLIGHT, INFLIGHT)
                    for _ in range(2 if name == "dev" else 10):
                        await fn()
                for rep in range(opts.repeat):
                    reps.append(await one_repetition(rep, opts, systems, meters))
                    x = reps[-1]
                    print(
                        f"  lgface {rep + 1}/{opts.repeat}: one at a time "
                        + ", ".join(f"{s} {x[s]['p50_ms']:.1f} ms" for s in SYSTEMS)
                        + f"; {INFLIGHT} in flight "
                        + ", ".join(f"{s} {x[s]['runs_per_s']:.1f}/s" for s in SYSTEMS),
                        flush=True,
                    )
        finally:
            server.stop()
            dev.stop()
    return summarize(reps, opts)


def summarize(reps: list[dict[str, Any]], opts: Any) -> dict[str, Any]:
    def fig(name: str, key: str) -> list[float]:
        """One figure per repetition; ``cpu_N`` is server + Postgres at N in flight."""
        if key.startswith("cpu_"):
            per = [x[name][f"cpu_ms_per_run_{key[4:]}"] for x in reps]
            return [c["server"] + c["postgres"] for c in per]
        return [x[name][key] for x in reps]

    def ratio(a: str, b: str, key: str) -> float:
        pairs = zip(fig(a, key), fig(b, key), strict=True)
        return r(med([x / y for x, y in pairs if y]), 3)

    out: dict[str, Any] = {"in_flight": INFLIGHT, "runs_per_repetition": opts.lgface_runs}
    for name in SYSTEMS:
        s: dict[str, Any] = {k: r(med(fig(name, k))) for k in ("p50_ms", "p99_ms", "runs_per_s")}
        s["samples_per_repetition"] = reps[0][name]["samples"]
        for key in ("cpu_ms_per_run_1", "cpu_ms_per_run_10"):
            s[key] = {p: r(med([x[name][key][p] for x in reps])) for p in PARTS}
        out[name] = s
    q = {f"lg_over_native_{k}": ratio("lg", "native", k) for k in KEYS}
    q |= {f"dev_over_{s}_p50_ms": ratio("dev", s, "p50_ms") for s in ("lg", "native")}
    q |= {f"{s}_over_dev_runs_per_s": ratio(s, "dev", "runs_per_s") for s in ("lg", "native")}
    out["ratios"] = q
    out["all_ratios_lg_over_native_p50"] = [
        r(a / b, 3) for a, b in zip(fig("lg", "p50_ms"), fig("native", "p50_ms"), strict=True)
    ]
    out["met"] = {k: aim_met(k, q[f"lg_over_native_{k}"]) for k in KEYS if k in AIM}
    out["repetitions"] = reps
    return out


def aim_met(key: str, ratio: float) -> bool:
    return ratio >= 1 / 1.10 if key == "runs_per_s" else ratio <= 1.10


def markdown(res: dict[str, Any]) -> str:
    q, m, c = res["ratios"], res["machine"], res["config"]
    figures = [
        ("p50_ms", "latency, one at a time, median", "{:.1f} ms"),
        ("p99_ms", "latency, one at a time, p99", "{:.1f} ms"),
        ("runs_per_s", f"completed runs/s, {INFLIGHT} in flight", "{:.1f}"),
        ("cpu_1", "CPU ms/run, server + Postgres, one at a time", ""),
        ("cpu_10", f"CPU ms/run, server + Postgres, {INFLIGHT} in flight", ""),
    ]
    lines = [
        "# outlast's LangGraph face against its native API (and `langgraph dev`)",
        "",
        f"10-node graph (`ten`); {res['date']}; {m['platform']}, {m['cpus']} CPUs, load "
        f"average at start {m['load_average_at_start']}, at the end "
        f"{res['load_average_at_end']}; Python {m['python']}, langgraph {m['langgraph']}, "
        f"langgraph-api {m['langgraph_api']}; Postgres on the same host. "
        f"{'`--quick`, ' if c['quick'] else ''}median of {c['repeat']} repetition(s); "
        f"total {res['total_seconds']:.0f} s.",
        "",
        "| figure | LangGraph face | native face | `langgraph dev` | LG / native | aim | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, label, fmt in figures:
        if key.startswith("cpu_"):
            cells = [cpu_cell(res[s][f"cpu_ms_per_run_{key[4:]}"]) for s in SYSTEMS]
        else:
            cells = [fmt.format(res[s][key]) for s in SYSTEMS]
        ratio = f"**{q[f'lg_over_native_{key}']:.2f}×**"
        met = res["met"].get(key)
        cells += [ratio, AIM.get(key, ""), "—" if met is None else ("yes" if met else "no")]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += [
        "",
        f"Against `langgraph dev`: one run alone takes {q['dev_over_lg_p50_ms']:.1f}× as long "
        f"as on the LangGraph face ({q['dev_over_native_p50_ms']:.1f}× native); at "
        f"{INFLIGHT} in flight the LangGraph face completes {q['lg_over_dev_runs_per_s']:.1f}× "
        f"its runs/s (native {q['native_over_dev_runs_per_s']:.1f}×).",
        "",
        notes(argparse.Namespace(**c)),
        "",
        f"Per-repetition LG / native latency ratios {res['all_ratios_lg_over_native_p50']}; "
        "every repetition's figures in `lg_face.json`.",
    ]
    return "\n".join(lines) + "\n"


def cpu_cell(v: dict[str, float]) -> str:
    return f"{v['server'] + v['postgres']:.1f} ({v['server']:.1f} + {v['postgres']:.1f})"


def notes(o: Any) -> str:
    """How the figures were taken (the suite's notes too)."""
    return (
        "All three up at once on one machine: outlast `serve --concurrency 10` on Postgres "
        "(a fresh database; both faces on the same server), `langgraph dev "
        "--n-jobs-per-worker 10` (in-memory). LangGraph face and dev: `langgraph_sdk` "
        "`client.runs.wait(None, 'ten', input=...)` (one `POST /runs/wait`); native face: "
        "`POST /v1/runs` then `GET /v1/runs/{id}/result?wait=30` through httpx (the SDK "
        f"cannot speak `/v1`). One at a time: {o.lgface_samples} runs per face and "
        f"{o.lgface_dev_samples} for dev per repetition, in blocks of 10 rotating "
        f"between the systems; {INFLIGHT} in flight: {o.lgface_runs} runs each, order "
        "rotating per repetition. CPU from `/proc`: the server process plus the Postgres "
        "backends of the benchmark's database (the dev server uses none). Ratios are "
        "medians of per-repetition ratios."
    )


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--database-url", default=ADMIN_URL, help="admin connection")
    p.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    p.add_argument("--repeat", type=int, help="repetitions (default 3; --quick 1)")
    p.add_argument("--samples", dest="lgface_samples", type=int, help="latency samples per face")
    p.add_argument("--dev-samples", dest="lgface_dev_samples", type=int, help="for the dev server")
    p.add_argument("--runs", dest="lgface_runs", type=int, help=f"runs at {INFLIGHT} in flight")
    args = p.parse_args()
    for name, full, quick in (
        ("repeat", 3, 1),
        ("lgface_samples", 50, 20),
        ("lgface_dev_samples", 10, 5),
        ("lgface_runs", 100, 50),
    ):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    return args


async def main() -> None:
    args = parse_args()
    started, at_start = time.monotonic(), machine()
    res = await measure(args, args.database_url)
    res |= {
        "config": {k: v for k, v in vars(args).items() if k != "database_url"},
        "machine": at_start,
        "date": now_iso(),
        "load_average_at_end": [r(x) for x in os.getloadavg()],
        "total_seconds": r(time.monotonic() - started, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lg_face.json").write_text(json.dumps(res, indent=2) + "\n")
    table = markdown(res)
    (RESULTS / "lg_face.md").write_text(table)
    print("\n" + table)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
