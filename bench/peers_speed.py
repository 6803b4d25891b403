"""Speed and scale of every peer through the same ``langgraph_sdk`` client.

- **Completed runs/s** of the 10-node graph at each level of runs in flight, in two ways a
  LangGraph app starts a run: ``runs.wait`` on no thread (create and wait in one request,
  as the SDK's quick start does) and ``threads.create`` + ``runs.create`` + ``runs.join``
  (what an app that hands the run id around does; on a thread, since LangGraph's servers
  delete a threadless run as it ends, and a join that comes later finds nothing). A
  closed loop: each of the in-flight clients starts its next run when its last one
  completed, until the level's runs were started or its time cap passed (a slow peer is
  measured on what it completed, not waited for).
- **p50/p99 from create to terminal**: each completed run's latency in that loop.
- **CPU per run**: every process of the server's tree, the Postgres backends of its own
  database and, where the server uses it, Redis, over the same loop.
- **First streamed event after create**: one run at a time, ``runs.stream`` with
  ``stream_mode="updates"``: the time until the first node's update arrives (the
  ``metadata`` event every server sends at once says nothing about the run).

Every peer is up at once and measured in alternation: at each level and way, one peer
after the other, the order rotating with the repetition, so that the machine's other
tenants and its drift hit all alike. A figure is the median over repetitions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from benchkit import med, pct, r
from langgraph_sdk.client import LangGraphClient
from peerkit import Peer, TreeCpu, closed_loop

MODES = ("wait", "join")


def sdk(base: str, connections: int = 400) -> LangGraphClient:
    """``get_client``'s client with a connection pool as large as the load: its default
    (httpx's 100 connections, 5 s to get one) would queue 200 runs in flight in the
    client and fail them there, whatever the server could do."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    http = httpx.AsyncClient(
        base_url=base,
        transport=httpx.AsyncHTTPTransport(retries=5, limits=limits),
        timeout=httpx.Timeout(connect=10, read=300, write=300, pool=300),
    )
    return LangGraphClient(http)


def _check(out: Any) -> None:
    if not (isinstance(out, dict) and len(out.get("steps", [])) == 10):
        raise RuntimeError(f"unexpected result: {str(out)[:200]}")


def caller(client: LangGraphClient, mode: str) -> Callable[[], Awaitable[None]]:
    async def wait() -> None:
        _check(await client.runs.wait(None, "ten", input={}))

    async def join() -> None:
        # on a thread of its own: a threadless run is gone once it ends on LangGraph's
        # servers (its temporary thread is deleted), so a join that comes after the end
        # finds nothing there
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "ten", input={})
        _check(await client.runs.join(thread, run["run_id"]))

    return wait if mode == "wait" else join


async def first_event(client: LangGraphClient) -> float:
    """Milliseconds from the request to the first ``updates`` event of a new run."""
    t0 = time.monotonic()
    first = None
    async for part in client.runs.stream(None, "ten", input={}, stream_mode="updates"):
        if part.event == "updates" and first is None:
            first = 1000 * (time.monotonic() - t0)
    if first is None:
        raise RuntimeError("the stream ended without an update")
    return first


async def measure(opts: Any, peers: list[Peer]) -> dict[str, Any]:
    clients = {p.name: sdk(p.base) for p in peers}
    for p in peers:  # warm-up: imports, pools, the first compile of the graph
        await closed_loop(caller(clients[p.name], "wait"), 20, 10, 60)
        await closed_loop(caller(clients[p.name], "join"), 20, 10, 60)
    cells: dict[str, dict[str, dict[str, list[dict[str, float]]]]] = {
        p.name: {m: {str(n): [] for n in opts.levels} for m in MODES} for p in peers
    }
    firsts: dict[str, list[float]] = {p.name: [] for p in peers}
    errors: dict[str, dict[str, int]] = {p.name: {} for p in peers}
    for rep in range(opts.repeat):
        shift = rep % len(peers)
        order = peers[shift:] + peers[:shift]
        for n in opts.levels:
            runs = max(opts.runs_min, n * opts.runs_per_level)
            for mode in MODES:
                for p in order:
                    meter = TreeCpu(p).start()
                    loop = await closed_loop(caller(clients[p.name], mode), runs, n, opts.cell_cap)
                    used = meter.stop()
                    rate, ms, failed = loop.rate, loop.latencies, loop.failed
                    for reason, count in loop.errors.items():
                        errors[p.name][reason] = errors[p.name].get(reason, 0) + count
                    done = max(len(ms), 1)
                    cells[p.name][mode][str(n)].append(
                        {
                            "runs_per_s": r(rate),
                            "p50_ms": r(pct(ms, 50), 1),
                            "p99_ms": r(pct(ms, 99), 1),
                            "completed": len(ms),
                            "failed": failed,
                            **{
                                f"cpu_{k}_ms": r(1000 * used[k] / done)
                                for k in ("server", "postgres", "redis", "client")
                            },
                            # cores busy, anything's: 2.0 is all of this machine
                            "machine_cores": r(used["machine"] / used["elapsed"]),
                        }
                    )
                    print(
                        f"  speed {rep + 1}/{opts.repeat} {n:>3} in flight {mode:<4} "
                        f"{p.name:<20} {rate:7.1f} runs/s  p99 {pct(ms, 99):7.0f} ms  "
                        f"server {1000 * used['server'] / done:5.1f} ms/run"
                        + (f"  ({failed} failed)" if failed else "")
                    )
        for p in order:
            for _ in range(opts.stream_samples):
                firsts[p.name].append(await first_event(clients[p.name]))
    for c in clients.values():
        await c.aclose()
    out: dict[str, Any] = {"levels": opts.levels, "peers": {}}
    for p in peers:
        mine: dict[str, Any] = {"modes": {}}
        for mode in MODES:
            mine["modes"][mode] = {
                n: {key: r(med([rep[key] for rep in reps]), 2) for key in reps[0]}
                | {"all_runs_per_s": [rep["runs_per_s"] for rep in reps]}
                for n, reps in cells[p.name][mode].items()
            }
        mine["first_event_ms"] = {
            "p50": r(pct(firsts[p.name], 50), 1),
            "p99": r(pct(firsts[p.name], 99), 1),
            "samples": len(firsts[p.name]),
        }
        mine["errors"] = errors[p.name]
        out["peers"][p.name] = mine
    return out


async def parked_memory(opts: Any, peer: Peer) -> dict[str, Any]:
    """RSS of the server's whole tree, idle after the speed runs, then with
    ``opts.parked`` runs of ``ask`` waiting at their ``interrupt()`` (each on its own
    thread, 50 created at a time, each joined until it waits): what holding runs costs
    a server, the runs people have not answered yet."""
    client = sdk(peer.base)

    async def settle() -> int:
        samples = []
        for _ in range(6):
            samples.append(peer.rss())
            await asyncio.sleep(0.5)
        return int(med(samples))

    idle = await settle()
    made = 0

    async def park() -> None:
        nonlocal made
        thread = await client.threads.create()
        run = await client.runs.create(thread["thread_id"], "ask", input={"key": "m"})
        await client.runs.join(thread["thread_id"], run["run_id"])
        made += 1

    failed = (await closed_loop(park, opts.parked, 50, opts.parked_cap)).failed
    parked = await settle()
    await client.aclose()
    return {
        "parked": made,
        "failed": failed,
        "idle_mib": r(idle / 2**20, 1),
        "parked_mib": r(parked / 2**20, 1),
        "bytes_per_parked_run": int((parked - idle) / max(made, 1)),
    }
