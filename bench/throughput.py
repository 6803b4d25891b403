"""Throughput: completed runs per second at N in flight, outlast against ``langgraph dev``.

Both servers run the same 10-node graph (bench/graphs.py ``ten``) on the same machine, at
the same time, and are measured in alternation: repetition i runs outlast then the dev
server (or the other way round on odd repetitions) at each level, so drift and the other
tenants of the machine hit both alike. A figure is the median over the repetitions, and
the ratio is the median of the per-repetition ratios.

- outlast: ``outlast serve`` (API and embedded worker, Postgres in a fresh database,
  ``--concurrency`` = the highest level), each run ``POST /v1/runs`` then
  ``GET /v1/runs/{id}/result?wait=30``: accepted, executed with a checkpoint per step,
  every event persisted, and the result read back.
- the dev server: ``langgraph dev`` (LangGraph's in-memory runtime, ``--n-jobs-per-worker``
  = the highest level), each run ``client.runs.wait(None, "ten", input=...)`` through the
  LangGraph SDK: a threadless run, created and joined in one request. Its checkpoints live
  in memory; that is what the local dev server is.

Beside the rates: the median latency of one run alone on each (a system whose single run
takes a second is capped at N runs/s at N in flight, whatever its CPU could do), and the
CPU each run cost the server process and the Postgres backends of the benchmark's
database, at the lowest level.
"""

from __future__ import annotations

import asyncio
import functools
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from benchkit import CpuMeter, DevServer, Outlast, med, r, temp_database
from langgraph_sdk import get_client
from overhead import INPUT, outlast_run, throughput, timed


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    levels: list[int] = opts.levels
    top = max(levels)
    async with temp_database(admin_url) as db:
        outlast = Outlast(db, concurrency=top)
        dev = DevServer(["ten"], jobs=top)
        try:
            await asyncio.gather(outlast.ready(), dev.ready())
            limits = httpx.Limits(max_connections=top + 10, max_keepalive_connections=top + 10)
            async with httpx.AsyncClient(timeout=120.0, limits=limits) as client:
                sdk = get_client(url=dev.base, timeout=120.0)

                async def on_dev() -> str:
                    out = await sdk.runs.wait(None, "ten", input=dict(INPUT))
                    ok = isinstance(out, dict) and len(out.get("steps", [])) == 10
                    return "completed" if ok else f"bad result {out}"

                systems: dict[str, Callable[[], Awaitable[str]]] = {
                    "outlast": functools.partial(outlast_run, client, outlast.base),
                    "dev": on_dev,
                }
                for fn in systems.values():  # warm-up: imports, pools, first compiles
                    await throughput(fn, max(20, top), top)
                # One run alone, to read the rates against: a system whose single run is
                # slow is capped at (in flight / latency) whatever its CPU could do.
                alone = {s: [await timed(fn) for _ in range(5)] for s, fn in systems.items()}
                rates: dict[str, dict[int, list[float]]] = {
                    s: {n: [] for n in levels} for s in systems
                }
                cpu: dict[str, list[float]] = defaultdict(list)
                for rep in range(opts.repeat):
                    order = list(systems) if rep % 2 == 0 else list(reversed(systems))
                    for n in levels:
                        for name in order:
                            pid = outlast.pid if name == "outlast" else dev.pid
                            meter = CpuMeter({"server": pid}, db).start()
                            rate = await throughput(systems[name], opts.throughput_runs, n)
                            used = meter.stop()
                            rates[name][n].append(rate)
                            if n == levels[0]:
                                for part in ("server", "postgres"):
                                    per_run = 1000 * used[part] / opts.throughput_runs
                                    cpu[f"{name}_{part}"].append(per_run)
                        print(
                            f"  throughput {rep + 1}/{opts.repeat}, {n} in flight: outlast "
                            f"{rates['outlast'][n][-1]:.1f} runs/s, dev server "
                            f"{rates['dev'][n][-1]:.1f} runs/s"
                        )
        finally:
            outlast.stop()
            dev.stop()
    out: dict[str, Any] = {
        "levels": {},
        "runs_per_repetition": opts.throughput_runs,
        "one_run_alone_ms": {s: r(med(ms), 1) for s, ms in alone.items()},
    }
    for n in levels:
        o, d = rates["outlast"][n], rates["dev"][n]
        out["levels"][str(n)] = {
            "outlast_runs_per_s": r(med(o)),
            "dev_runs_per_s": r(med(d)),
            "ratio": r(med([a / b for a, b in zip(o, d, strict=True)])),
            "outlast_all": [r(x) for x in o],
            "dev_all": [r(x) for x in d],
        }
    # CPU per run: the server process, and the Postgres backends of the benchmark's
    # database (the dev server uses none); at the lowest level, where neither is saturated.
    out["cpu_ms_per_run"] = {k: r(med(v)) for k, v in sorted(cpu.items())}
    return out
