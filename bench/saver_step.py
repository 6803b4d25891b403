"""Client CPU of a checkpoint step on the fenced Postgres saver, checkouts side by side.

    .venv/bin/python bench/saver_step.py --label mine --version base=/tmp/base --version new=.

A step is what LangGraph writes for a node: ``aput`` of a checkpoint with two channels in
blobs, then ``aput_writes`` of its task's two writes, one run alone, each awaited before
the next. ``bench/ab.py`` measures the whole server; this isolates the saver and the group
commit under it, so that a change of a few per cent to how a write is sent shows above
the noise of HTTP, the Pregel loop and the machine. The figure is the process's CPU time
per step (``time.process_time``), which a busy machine disturbs far less than wall time.
Each repetition runs every version in its own process on a fresh database, versions
alternated (ABBA…); the report gives medians.

Writes ``bench/results/profiles/<label>-saver.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from benchkit import RESULTS, machine, now_iso, temp_database

PROFILES = RESULTS / "profiles"
WARMUP = 200


async def child(url: str, steps: int) -> dict[str, float]:
    """Runs in the measured checkout (its ``PYTHONPATH``): one run's steps, timed."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import empty_checkpoint

    from outlast.store import Lease, NewRun
    from outlast.store.postgres import PostgresStore

    store = PostgresStore(url, max_size=5)
    await store.open()
    await store.migrate()
    thread = str(uuid.uuid4())
    new = NewRun(
        id=str(uuid.uuid4()), thread_id=thread, graph="steps", input={}, config={},
        metadata={}, budget=None, idempotency_key=None, fingerprint="bench", max_attempts=1,
    )  # fmt: skip
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim("bench", 3600, 1)
    saver = store.checkpointer(Lease(run.id, "bench", claimed.lease_epoch))
    config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    message = {"role": "user", "content": "hello " * 20}

    async def step(i: int) -> None:
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": [message] * (1 + i % 3), "steps": [i]}
        versions = {"messages": i + 1, "steps": i + 1}
        checkpoint["channel_versions"] = dict(versions)
        saved = await saver.aput(config, checkpoint, {"source": "loop", "step": i}, versions)
        await saver.aput_writes(saved, [("messages", [message]), ("steps", [i])], f"t{i}")

    for i in range(WARMUP):
        await step(i)
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(WARMUP, WARMUP + steps):
        await step(i)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await store.close()
    return {"cpu_us_per_step": cpu / steps * 1e6, "wall_us_per_step": wall / steps * 1e6}


async def one(admin_url: str, checkout: str, steps: int) -> dict[str, float]:
    async with temp_database(admin_url) as url:
        env = {**os.environ, "PYTHONPATH": checkout}
        cmd = [sys.executable, __file__, "--child", url, "--steps", str(steps)]
        proc = await asyncio.to_thread(
            subprocess.run, cmd, env=env, capture_output=True, text=True, check=True
        )
    figures: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


async def main(opts: argparse.Namespace) -> None:
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in opts.versions}
    for rep in range(opts.repeat):
        order = list(opts.versions) if rep % 2 == 0 else list(reversed(opts.versions))
        for name in order:
            got = await one(opts.database_url, opts.versions[name], opts.steps)
            samples[name].append(got)
            print(rep, name, {k: round(v) for k, v in got.items()}, flush=True)
    medians = {
        name: {k: round(statistics.median(s[k] for s in runs)) for k in runs[0]}
        for name, runs in samples.items()
    }
    out = {"when": now_iso(), "machine": machine(), "medians": medians, "samples": samples}
    out["options"] = {k: v for k, v in vars(opts).items() if k != "child"}
    PROFILES.mkdir(parents=True, exist_ok=True)
    (PROFILES / f"{opts.label}-saver.json").write_text(json.dumps(out, indent=2) + "\n")
    first = next(iter(medians.values()))["cpu_us_per_step"]
    lines = [
        f"# Saver step, client CPU, checkouts side by side ({out['when']})",
        "",
        f"{opts.steps} steps (`aput` + `aput_writes`) of one run per repetition, "
        f"{opts.repeat} repetitions alternated, medians; machine: {json.dumps(out['machine'])}.",
        "",
        "| version | CPU per step | ratio | wall per step |",
        "|---|---|---|---|",
    ]
    for name, m in medians.items():
        lines.append(
            f"| `{name}` | {m['cpu_us_per_step']} µs | {m['cpu_us_per_step'] / first:.2f} "
            f"| {m['wall_us_per_step']} µs |"
        )
    (PROFILES / f"{opts.label}-saver.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", help="names the result files")
    p.add_argument("--version", action="append", default=[], help="LABEL=DIR, a checkout")
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=6)
    p.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    p.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    opts = p.parse_args()
    if not opts.child and (not opts.label or not opts.version):
        p.error("--label and at least one --version are needed")
    pairs = (v.split("=", 1) for v in opts.version)
    opts.versions = {name: str(Path(d).resolve()) for name, d in pairs}
    return opts


if __name__ == "__main__":
    options = parse()
    if options.child:
        print(json.dumps(asyncio.run(child(options.child, options.steps))))
    else:
        asyncio.run(main(options))
