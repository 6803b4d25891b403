"""Agents in flight: outlast, Aegra and ``langgraph dev`` under load shaped like real agents.

    .venv/bin/python bench/agents.py                   # 100 and 1000 in flight
    .venv/bin/python bench/agents.py --inflight 100,300
    .venv/bin/python bench/agents.py --quick           # 20 in flight, about 2 minutes

Each run is the ``agent`` graph of bench/peers/agent.py: four calls of a fake chat model
(0.5 to 2 s each, streaming 100 stamped tokens over it) and three tool calls (0.1 to 0.5 s
of asyncio I/O). Every server serves it from bench/peers/langgraph.json and is started as
bench/peers.py starts it (outlast: one process on a fresh Postgres database; Aegra in its
Redis mode, in its own venv; ``langgraph dev``), with room to execute every run in flight
at once (``--concurrency``, the top level by default). Through ``langgraph_sdk`` only, a
closed loop keeps N runs in flight, each on a new thread with a client on its stream in
``messages-tuple`` mode, for ``--duration`` seconds; the runs then in flight get ``--drain``
seconds more, after which they are cut and counted as not completed, and what the server
still holds of them is read back and cancelled. Results: bench/results/agents.json and
agents.md (agents_report.py says how each figure was taken).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agents_report
import benchkit
import busy
from agents_kit import Watch, idle_rss, leftovers, quiet, rss_figures
from benchkit import RESULTS, med, now_iso, pct, r
from langgraph_sdk.client import LangGraphClient
from peerkit import Peer, TreeCpu, closed_loop
from peers import Stack
from peers_speed import sdk

ALL_PEERS = ("outlast", "aegra", "langgraph dev")
STAMP = re.compile(r"@(\d+\.\d+)~(\d+\.\d+)")
EXPECTED_TOKENS = 400  # agent.MODEL_CALLS × agent.TOKENS (agent.py imports no bench code)

SIZES: list[benchkit.Size] = [
    ("duration", 60.0, 15.0, "seconds a level keeps starting runs"),
    ("drain", 60.0, 30.0, "seconds the runs in flight then get before they are cut"),
    ("repeat", 1, 1, "repetitions of every level; figures are their medians"),
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--database-url", default=benchkit.ADMIN_URL, help="admin connection")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379", help="Redis, for Aegra")
    p.add_argument("--quick", action="store_true", help="a smoke: 20 in flight, short levels")
    p.add_argument("--inflight", help="runs in flight, comma-separated (default 100,1000)")
    p.add_argument("--peers", help=f"comma-separated subset of: {', '.join(ALL_PEERS)}")
    p.add_argument(
        "--concurrency",
        type=int,
        help="runs each server executes at once (default: the top level, so that the\n"
        "servers run every run in flight; lower it to see their queues)",
    )
    p.add_argument("--render", action="store_true", help="measure nothing: rewrite agents.md")
    p.add_argument(
        "--label",
        help="write agents-LABEL.{json,md} instead (a variant: on one core, say, under taskset)",
    )
    p.add_argument(
        "--add",
        action="store_true",
        help="keep the levels of the last agents.json and add (or retake) these",
    )
    benchkit.add_sizes(p, SIZES)
    args = p.parse_args(argv)
    benchkit.apply_sizes(args, SIZES)
    levels = args.inflight or ("20" if args.quick else "100,1000")
    args.inflight = [int(x) for x in levels.split(",")]
    args.concurrency = args.concurrency or max(args.inflight)
    args.peers = args.peers.split(",") if args.peers else list(ALL_PEERS)
    unknown = set(args.peers) - set(ALL_PEERS)
    if unknown:
        p.error(f"unknown peers: {', '.join(sorted(unknown))}")
    return args


class RunFailed(Exception):
    """A run whose stream said it failed, or did not carry the model's tokens."""


@dataclass
class Sink:
    """What the streams of one level delivered: token delays (receipt − emit, ms), the
    loop lags the model reported (ms), and the threads of the runs cut at the bound."""

    delays: array[float] = field(default_factory=lambda: array("d"))
    lags: array[float] = field(default_factory=lambda: array("d"))
    tokens: int = 0
    cut: list[str] = field(default_factory=list)


async def stream_run(client: LangGraphClient, thread: str, task: str, sink: Sink) -> None:
    """One run, its client on its stream in ``messages-tuple`` mode to the end."""
    tokens = 0
    payload: dict[str, Any] = {"messages": [{"role": "human", "content": task}]}
    async for part in client.runs.stream(
        thread, "agent", input=payload, stream_mode="messages-tuple"
    ):
        now = time.time()
        if part.event.startswith("messages") and isinstance(part.data, list) and part.data:
            for stamp in STAMP.finditer(str(part.data[0].get("content", ""))):
                sink.delays.append(1000 * (now - float(stamp[1])))
                sink.lags.append(float(stamp[2]))
                sink.tokens += 1
                tokens += 1
        elif part.event == "error":
            raise RunFailed(f"error event: {str(part.data)[:100]}")
    if tokens != EXPECTED_TOKENS:
        raise RunFailed(f"{tokens} tokens of {EXPECTED_TOKENS}")


def runner(client: LangGraphClient, label: str, deadline: float, sink: Sink) -> Any:
    """The closed loop's call: a thread, then its run streamed, cut at ``deadline``."""
    count = 0

    async def one() -> None:
        nonlocal count
        count += 1
        task, thread = f"task {label}-{count}", None
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                thread = (await client.threads.create())["thread_id"]
                await stream_run(client, thread, task, sink)
        except TimeoutError:
            if thread is not None:
                sink.cut.append(thread)
            raise

    return one


def categories(errors: Counter[str]) -> dict[str, int]:
    """The failures by what the client saw: the server refused (an HTTP error status),
    the run did not end within the bound, the run failed or lost tokens, or the
    connection broke."""
    out = {"refused": 0, "cut_at_bound": 0, "run_failed": 0, "connection": 0}
    for reason, n in errors.items():
        if reason.startswith("HTTP "):
            out["refused"] += n
        elif reason.startswith("TimeoutError"):
            out["cut_at_bound"] += n
        elif reason.startswith("RunFailed"):
            out["run_failed"] += n
        else:
            out["connection"] += n
    return out


async def cell(opts: Any, peer: Peer, level: int, rep: int) -> dict[str, Any]:
    """One level on one server: the closed loop, what it cost, what was left."""
    idle = await idle_rss(peer)
    client = sdk(peer.base, connections=level + 50)
    sink = Sink()
    deadline = time.monotonic() + opts.duration + opts.drain
    watch = Watch(peer)
    meter = TreeCpu(peer).start()
    loop = await closed_loop(
        runner(client, f"{level}-{rep}", deadline, sink), 10**9, level, opts.duration
    )
    used = meter.stop()
    await watch.stop()
    left = await leftovers(client, sink.cut)
    await client.aclose()
    left["quiet_after_s"] = await quiet(peer)
    done = len(loop.latencies) or math.nan  # no run completed: no cost per run
    return {
        "runs_per_s": r(loop.rate, 2),
        "completed": len(loop.latencies),
        "failed": loop.failed,
        **categories(loop.errors),
        "run_p50_s": r(pct(loop.latencies, 50) / 1000, 2),
        "run_p99_s": r(pct(loop.latencies, 99) / 1000, 2),
        "token_p50_ms": r(pct(sink.delays, 50), 1),
        "token_p99_ms": r(pct(sink.delays, 99), 1),
        "tokens_per_s": r(sink.tokens / max(used["elapsed"], 1e-9), 0),
        "lag_p50_ms": r(pct(sink.lags, 50), 2),
        "lag_p99_ms": r(pct(sink.lags, 99), 2),
        "lag_max_ms": r(max(sink.lags, default=math.nan), 1),
        **{f"cpu_{k}_ms": r(1000 * used[k] / done, 1) for k in ("server", "postgres", "redis")},
        "cpu_client_ms": r(1000 * used["client"] / done, 1),
        "server_cores": r(used["server"] / used["elapsed"], 2),
        "machine_cores": r(used["machine"] / used["elapsed"], 2),
        "elapsed_s": r(used["elapsed"], 1),
        "client_lag_p99_ms": r(pct(watch.lags, 99), 1),
        **rss_figures(watch.samples, idle, level, opts.duration),
        "errors": dict(loop.errors),
        "left": left,
    }


def combine(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the repetitions (a figure a repetition could not
    take, such as CPU per run with none completed, left out); every repetition kept."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for rep in reps for k in rep):  # a later rep may add figures
        values = [rep[key] for rep in reps if key in rep]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            numbers = [v for v in values if not math.isnan(v)]
            out[key] = r(med(numbers), 2) if numbers else math.nan
    out["each"] = reps
    return out


async def measure(opts: Any, stack: Stack, res: dict[str, Any], watch: busy.Watch) -> None:
    peers = [p for name in opts.peers if (p := await stack.make(name)) is not None]
    res["unavailable"] |= stack.unavailable
    cells: dict[str, dict[str, list[dict[str, Any]]]] = {p.name: {} for p in peers}
    for name, by in res["peers"].items():  # --add: a level taken again has more repetitions
        for level, old in by.items():
            cells.setdefault(name, {})[level] = list(old["each"])
    for p in peers:  # warm-up: imports, pools, the graph's first compile
        client = sdk(p.base)
        await closed_loop(runner(client, "warm", time.monotonic() + 60, Sink()), 5, 5, 30)
        await client.aclose()
    for rep in range(opts.repeat):
        for i, level in enumerate(opts.inflight):
            shift = (rep + i) % len(peers)
            for p in peers[shift:] + peers[:shift]:
                print(f"  {rep + 1}/{opts.repeat} {level} in flight: {p.name} …", flush=True)
                c = await cell(opts, p, level, rep)
                cells[p.name].setdefault(str(level), []).append(c)
                print(f"    {json.dumps({k: v for k, v in c.items() if k != 'errors'})}")
                print(f"    errors: {c['errors']}", flush=True)
                res["peers"] = {
                    name: {lv: combine(reps) for lv, reps in by.items()}
                    for name, by in cells.items()
                }
                write(res, watch)


def _named(label: str | None, suffix: str) -> Path:
    return RESULTS / (f"agents-{label}.{suffix}" if label else f"agents.{suffix}")


def write(res: dict[str, Any], watch: busy.Watch | None = None) -> None:
    """The results so far: a run stopped early still says how loaded the machine was."""
    if watch is not None and watch.elapsed:
        cores = watch.others / watch.elapsed
        res["busy"] = {"others_cores": r(cores), "busy": cores > busy.BUSY_CORES}
        res["load_average_at_end"] = [r(x) for x in os.getloadavg()]
    RESULTS.mkdir(exist_ok=True)
    label = res["options"].get("label")
    _named(label, "json").write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    _named(label, "md").write_text(agents_report.markdown(res))


def keep(res: dict[str, Any], prior: dict[str, Any]) -> None:
    """``--add``: the earlier sessions' levels stay, with how loaded the machine was then."""
    session = {k: prior.get(k) for k in ("taken", "busy", "total_s", "load_average_at_end")}
    session["load_average_at_start"] = prior["machine"]["load_average_at_start"]
    session |= {k: prior["options"][k] for k in ("concurrency", "duration", "drain")}
    session["inflight"] = prior["options"].get("taken_now", prior["options"]["inflight"])
    res["earlier"] = [*prior.get("earlier", []), session]
    res["peers"] = prior["peers"]
    res["unavailable"] = prior.get("unavailable", {})
    mine = res["options"]["inflight"]
    res["options"]["inflight"] = sorted(set(mine) | set(prior["options"]["inflight"]))
    res["options"]["taken_now"] = mine


async def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    if opts.render:
        write(json.loads(_named(opts.label, "json").read_text()))
        return
    began = time.monotonic()
    res: dict[str, Any] = {
        "taken": now_iso(),
        "machine": benchkit.machine(),
        "options": {k: v for k, v in vars(opts).items() if k != "render"},
        "unavailable": {},
        "peers": {},
    }
    if opts.add and _named(opts.label, "json").exists():
        keep(res, json.loads(_named(opts.label, "json").read_text()))
    watch = busy.Watch().start()
    async with contextlib.AsyncExitStack() as exits:
        await measure(opts, Stack(opts, exits), res, watch)
    res["busy"] = await watch.stop()
    res["total_s"] = round(time.monotonic() - began)
    res["load_average_at_end"] = [r(x) for x in os.getloadavg()]
    write(res)
    print(f"wrote {_named(opts.label, 'md')} in {res['total_s']} s")


if __name__ == "__main__":
    asyncio.run(main())
