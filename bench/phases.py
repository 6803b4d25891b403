"""Where one run's latency goes, phase by phase, beside plain LangGraph on the same database.

    .venv/bin/python bench/phases.py               # 60 runs after 20 of warm-up
    .venv/bin/python bench/phases.py --version /tmp/base   # another checkout

``bench/overhead.py`` says how much slower one run is through outlast than a plain
``ainvoke`` on ``AsyncPostgresSaver``; this says where. Runs go one at a time through
``POST /v1/runs`` + ``result?wait``, and each is cut at the times the database stamped on
its events as it wrote them (``clock_timestamp()``, before the commit; the same clock as
the client's on one machine): accepted (``run.created``), claimed (``run.started``), each
step's checkpoint write (a step's ``node.updated`` rides in it), finished (the terminal
event), plus the client's own times before the POST and when it has the result. The
10-node graph has 10 steps, so the time from the first step to the last is 9 steps of the
work plain LangGraph does too, and the rest is what outlast adds. Plain ``ainvoke`` runs
in alternation with it, on a pool of its own.

Writes ``bench/results/phases.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from benchkit import RESULTS, Outlast, machine, now_iso, temp_database
from overhead import INPUT, direct_runner

PHASES = (
    ("POST sent → accepted (`run.created` written)", "client", "created"),
    ("accepted → POST answered", "created", "answered"),
    ("accepted → claimed (`NOTIFY`, wake, claim)", "created", "started"),
    ("claimed → first step's checkpoint", "started", "first"),
    ("first step → last step (9 steps)", "first", "last"),
    ("last step → finished (terminal event)", "last", "done"),
    ("finished → the client has the result", "done", "result"),
    ("total", "client", "result"),
)


async def one_run(client: httpx.AsyncClient, base: str) -> dict[str, Any]:
    sent = time.time()
    r = await client.post(f"{base}/v1/runs", json={"graph": "ten", "input": INPUT})
    answered = time.time()
    run_id = r.json()["id"]
    while r.status_code == 202:
        r = await client.get(f"{base}/v1/runs/{run_id}/result", params={"wait": 30})
    if r.status_code != 200:
        raise RuntimeError(f"run {run_id}: {r.status_code} {r.text}")
    return {"id": run_id, "client": sent, "answered": answered, "result": time.time()}


async def stamps(db: str, run: dict[str, Any]) -> dict[str, float]:
    async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT type, extract(epoch FROM created_at)::float8 FROM outlast_events"
            " WHERE run_id = %s ORDER BY seq",
            (run["id"],),
        )
        events = await cur.fetchall()
    steps = [at for kind, at in events if kind == "node.updated"]
    started = next(at for kind, at in events if kind == "run.started")
    return run | {
        "created": events[0][1],
        "started": started,
        "first": steps[0],
        "last": steps[-1],
        "done": events[-1][1],
    }


async def measure(opts: argparse.Namespace) -> dict[str, Any]:
    env = {"PYTHONPATH": opts.version} if opts.version else {}
    async with temp_database(opts.database_url) as db:
        server = Outlast(db, concurrency=10, env=env)
        try:
            await server.ready()
            runs: list[dict[str, Any]] = []
            direct_ms: list[float] = []
            async with (
                httpx.AsyncClient(timeout=60) as client,
                direct_runner(db, 10) as direct,
            ):
                for i in range(opts.warmup + opts.samples):
                    run = await one_run(client, server.base)
                    start = time.perf_counter()
                    await direct()
                    took = (time.perf_counter() - start) * 1000
                    if i >= opts.warmup:
                        runs.append(run)
                        direct_ms.append(took)
            stamped = [await stamps(db, run) for run in runs]
        finally:
            server.stop()
    phases = {
        label: statistics.median((s[b] - s[a]) * 1000 for s in stamped) for label, a, b in PHASES
    }
    return {
        "when": now_iso(),
        "machine": machine(),
        "samples": opts.samples,
        "version": opts.version or "installed",
        "phases_ms": phases,
        "direct_ms": statistics.median(direct_ms),
    }


def render(out: dict[str, Any]) -> str:
    total = out["phases_ms"]["total"]
    lines = [
        "# One run, phase by phase",
        "",
        f"{out['when']}; {json.dumps(out['machine'])}; outlast {out['version']}. "
        f"Medians of {out['samples']} runs of the 10-node graph, one at a time, each "
        "phase's median on its own (they need not add up). Reproduce: "
        "`.venv/bin/python bench/phases.py`.",
        "",
        "| phase | median |",
        "|---|---|",
    ]
    lines += [f"| {label} | {ms:.2f} ms |" for label, ms in out["phases_ms"].items()]
    lines += [
        f"| plain `ainvoke` + `AsyncPostgresSaver`, same graph and database | "
        f"{out['direct_ms']:.2f} ms |",
        f"| ratio, total / plain | {total / out['direct_ms']:.2f}× |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=60)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--version", default="", help="a checkout of outlast to run instead")
    p.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    opts = p.parse_args()
    opts.version = str(Path(opts.version).resolve()) if opts.version else ""
    out = asyncio.run(measure(opts))
    (RESULTS / "phases.json").write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "phases.md").write_text(render(out))
    print(render(out))


if __name__ == "__main__":
    main()
