"""outlast beside the servers people would pick instead, through the same client.

    .venv/bin/python bench/peers.py            # 17 to 27 minutes on 2 cores
    .venv/bin/python bench/peers.py --quick    # under 5 minutes
    .venv/bin/python bench/peers.py --only speed --peers outlast,aegra
    .venv/bin/python bench/peers.py --only speed --levels 50 --label mine   # peers-mine.md

The peers, each installed and started by this script, serving the graphs of
bench/peers/langgraph.json (``ten``, ``ask``, ``slow``):

    outlast         ``outlast serve --workers 1`` on Postgres (a fresh database)
    outlast ×2      ``outlast serve --workers 2``: one process per core of this machine
    aegra           Aegra (``aegra-api`` from PyPI, in its own Python 3.12 venv under
                    .artifacts/peers), on its own fresh Postgres database and Redis
    langgraph dev   LangGraph's dev server (the in-memory runtime, from the dev extra)

Every server executes at most ``--concurrency`` runs at once per process (10, each one's
default); the load beyond waits in its queue.

Sections: ``speed`` (runs/s at each level in flight, p50/p99, CPU per run, the first
streamed event; peers_speed.py), ``memory`` (RSS with runs waiting at an interrupt) and
``faults`` (SIGKILL of every process with runs in flight, and with runs waiting; what was
lost or done twice; peers_faults.py). A peer that cannot be installed or started is in the
table with the reason; the others still run. Results: bench/results/peers.json (every
repetition) and bench/results/peers.md (the table, the aims, how each figure was taken),
rewritten after each section.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchkit
import busy
import peers_faults
import peers_report
import peers_speed
from benchkit import RESULTS, DevServer, Outlast, now_iso, temp_database
from peerkit import PEER_GRAPHS, Peer, peer_graphs

ARTIFACTS = benchkit.BENCH.parent / ".artifacts" / "peers"
ALL_PEERS = ("outlast", "outlast ×2", "aegra", "langgraph dev")
FAULT_PEERS = ("outlast ×2", "aegra", "langgraph dev")
SECTIONS = ("speed", "memory", "faults")
# A lease short enough that a killed worker's runs are taken over within the bounded
# watch after a restart (the default, 30 s, would be measured as the wait itself).
FAULT_ENV = {
    "OUTLAST_WORKER_LEASE_TTL": "5",
    "OUTLAST_WORKER_HEARTBEAT": "1.67",
    "OUTLAST_REAPER_INTERVAL": "0.5",
}

# Aegra's pools at outlast's size (20 connections; the bench's OUTLAST_POOL_MAX_SIZE): its
# defaults (up to 30 + 20) with every peer up at once would pass Postgres's 100 clients.
AEGRA_POOLS = {
    "SQLALCHEMY_POOL_SIZE": "10",
    "SQLALCHEMY_MAX_OVERFLOW": "0",
    "LANGGRAPH_MIN_POOL_SIZE": "2",
    "LANGGRAPH_MAX_POOL_SIZE": "10",
}

SIZES: list[benchkit.Size] = [
    ("repeat", 3, 1, "repetitions of the speed section; figures are their medians"),
    ("runs_per_level", 3, 2, "speed: runs per repetition = this × the level (at least --runs-min)"),
    ("runs_min", 20, 10, "speed: the fewest runs of a level"),
    ("cell_cap", 10.0, 3.0, "speed: seconds after which a level starts no more runs"),
    ("stream_samples", 10, 2, "speed: first-event samples per peer and repetition"),
    ("parked", 1000, 100, "memory: runs waiting at an interrupt"),
    ("parked_cap", 120.0, 45.0, "memory: seconds after which no more runs are parked"),
    ("fault_delay", 3.0, 3.0, "faults: seconds the runs keep working after their effect"),
    ("fault_wait", 90.0, 75.0, "faults: seconds to watch the runs after the restart"),
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n", 1)[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--database-url", default=benchkit.ADMIN_URL, help="admin connection")
    p.add_argument("--redis-url", default="redis://127.0.0.1:6379", help="Redis, for Aegra")
    p.add_argument("--quick", action="store_true", help="small sizes, one repetition (< 5 min)")
    p.add_argument("--only", help=f"comma-separated subset of: {', '.join(SECTIONS)}")
    p.add_argument("--peers", help=f"comma-separated subset of: {', '.join(ALL_PEERS)}")
    p.add_argument("--levels", help="speed: runs in flight (default 1,10,50,200; --quick 1,10,50)")
    p.add_argument("--render", action="store_true", help="measure nothing: rewrite peers.md")
    p.add_argument(
        "--label", help="write peers-LABEL.{json,md}, leaving the full comparison's files be"
    )
    p.add_argument(
        "--concurrency",
        type=int,
        default=10,
        help="runs each server executes at once, per process (outlast --concurrency, the\n"
        "dev server's and Aegra's N_JOBS_PER_WORKER; 10 is each one's default): the load\n"
        "beyond it waits in the server's queue. The faults section raises it to its 20 runs",
    )
    benchkit.add_sizes(p, SIZES)
    args = p.parse_args(argv)
    benchkit.apply_sizes(args, SIZES)
    levels = args.levels or ("1,10,50" if args.quick else "1,10,50,200")
    args.levels = [int(x) for x in levels.split(",")]
    args.only = args.only.split(",") if args.only else list(SECTIONS)
    args.peers = args.peers.split(",") if args.peers else list(ALL_PEERS)
    for given, known in ((args.only, SECTIONS), (args.peers, ALL_PEERS)):
        unknown = set(given) - set(known)
        if unknown:
            p.error(f"unknown: {', '.join(sorted(unknown))}")
    return args


class Stack:
    """Makes the peers, each with its own fresh database, and takes them all down."""

    def __init__(self, opts: argparse.Namespace, exits: contextlib.AsyncExitStack) -> None:
        self.opts, self.exits = opts, exits
        self.unavailable: dict[str, str] = {}
        self.redis_db = 0

    async def make(self, name: str, *, faults: bool = False) -> Peer | None:
        top = max(self.opts.concurrency, peers_faults.RUNS) if faults else self.opts.concurrency
        env = FAULT_ENV if faults else None
        try:
            if name.startswith("outlast"):
                db = await self.exits.enter_async_context(temp_database(self.opts.database_url))
                workers = 2 if name.endswith("×2") else 1

                def outlast(port: int) -> Outlast:
                    return Outlast(
                        db,
                        concurrency=top,
                        config=PEER_GRAPHS,
                        port=port,
                        workers=workers,
                        env=env,
                    )

                peer = Peer(name, outlast, db=db)
            elif name == "langgraph dev":
                folder = Path(self.exits.enter_context(tempfile.TemporaryDirectory()))

                def dev(port: int) -> DevServer:
                    return DevServer(peer_graphs(), jobs=top, port=port, folder=folder)

                peer = Peer(name, dev, durable=False)
            else:
                peer = await self._aegra(top)
            await peer.start()
        except Exception as exc:
            self.unavailable[name] = describe(exc)
            print(f"  {name}: unavailable: {self.unavailable[name]}")
            return None
        self.exits.callback(peer.stop)
        return peer

    async def _aegra(self, top: int) -> Peer:
        import peer_servers  # the Aegra side; its venv is made on first use

        python = await asyncio.to_thread(peer_servers.ensure_aegra, ARTIFACTS)
        db = await self.exits.enter_async_context(temp_database(self.opts.database_url))
        self.redis_db += 1
        redis = f"{self.opts.redis_url.rstrip('/')}/{10 + self.redis_db}"

        def aegra(port: int) -> Any:
            return peer_servers.Aegra(
                python, db, redis, PEER_GRAPHS, jobs=top, port=port, env=AEGRA_POOLS
            )

        return Peer("aegra", aegra, db=db, redis=True)


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"[:300]


async def section_speed(opts: Any, stack: Stack, res: dict[str, Any]) -> None:
    peers = [p for n in opts.peers if (p := await stack.make(n)) is not None]
    if "speed" in opts.only:
        res["speed"] = await peers_speed.measure(opts, peers)
    if "memory" in opts.only:
        res["memory"] = {}
        for p in peers:
            print(f"  memory: {p.name}, {opts.parked} runs waiting at an interrupt")
            res["memory"][p.name] = await peers_speed.parked_memory(opts, p)
    for p in peers:
        p.stop()


async def section_faults(opts: Any, stack: Stack, res: dict[str, Any]) -> None:
    folder = Path(stack.exits.enter_context(tempfile.TemporaryDirectory()))
    res["faults"] = {}
    for name in (n for n in FAULT_PEERS if n in opts.peers):
        mine: dict[str, Any] = {}
        for scenario in (peers_faults.in_flight, peers_faults.waiting):
            peer = await stack.make(name, faults=True)
            if peer is None:
                break
            print(f"  faults: {name}, {scenario.__name__.replace('_', ' ')}")
            try:
                mine[scenario.__name__] = await scenario(peer, folder, opts)
            except Exception as exc:
                traceback.print_exc()
                mine[scenario.__name__] = {"error": describe(exc)}
            peer.stop()
            print(f"    {mine[scenario.__name__]}")
        res["faults"][name] = mine


SECTION: dict[str, Callable[[Any, Stack, dict[str, Any]], Any]] = {
    "speed": section_speed,
    "faults": section_faults,
}


def write(res: dict[str, Any], opts: Any) -> None:
    RESULTS.mkdir(exist_ok=True)
    name = f"peers-{opts.label}" if opts.label else "peers"
    (RESULTS / f"{name}.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / f"{name}.md").write_text(peers_report.markdown(res))


async def main(argv: list[str] | None = None) -> None:
    opts = parse_args(argv)
    if opts.render:
        taken = json.loads((RESULTS / "peers.json").read_text())
        (RESULTS / "peers.md").write_text(peers_report.markdown(taken))
        return
    began = time.monotonic()
    res: dict[str, Any] = {
        "taken": now_iso(),
        "machine": benchkit.machine(),
        "options": {k: v for k, v in vars(opts).items() if k not in ("render",)},
        "unavailable": {},
        "sections": {},
    }
    watch = busy.Watch().start()
    async with contextlib.AsyncExitStack() as exits:
        stack = Stack(opts, exits)
        for name in ("speed", "faults"):
            wanted = name in opts.only or (name == "speed" and "memory" in opts.only)
            if not wanted:
                continue
            t0 = time.monotonic()
            print(f"{name} …")
            try:
                await SECTION[name](opts, stack, res)
            except Exception as exc:
                traceback.print_exc()
                res[name] = {"error": describe(exc)}
            res["sections"][name] = round(time.monotonic() - t0)
            res["unavailable"] = stack.unavailable
            write(res, opts)
    res["busy"] = await watch.stop()
    res["total_s"] = round(time.monotonic() - began)
    res["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    write(res, opts)
    name = f"peers-{opts.label}" if opts.label else "peers"
    print(f"wrote {RESULTS / name}.md in {res['total_s']} s")


if __name__ == "__main__":
    asyncio.run(main())
