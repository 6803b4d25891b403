"""The faults the nemesis draws from, each a coroutine that breaks something and heals it.

A fault returns when it is healed (the processes it killed are started again, the
process it froze runs again, the database is back): the trial then measures the time
from that moment until the deployment serves and completes a run again.

- ``kill_one``: SIGKILL of one process, drawn from all four, started again at once.
- ``kill_all``: SIGKILL of every process at once, as a machine that loses power.
- ``freeze``: SIGSTOP of a process that executes runs, for longer than its lease, then
  SIGCONT; its runs were taken over meanwhile, and what it does on waking must be
  refused (the fence) and must not start an effect.
- ``pg_fast`` / ``pg_immediate``: Postgres restarted under load, with a fast shutdown
  (sessions ended, checkpoint) or an immediate one (a crash: recovery from the WAL);
  every process's pool and ``LISTEN`` connections break.
- ``partition``: worker ``w1``, in a network namespace of its own, is cut from Postgres
  for a while (``Cluster.partition_s``) with every packet dropped, no reset
  (``tests/netns.py``), then healed: its connections go half-open, its leases run out
  and its runs are taken over; on healing, what it still tries must be refused.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from nemesis_cluster import LEASE_TTL, Cluster
from nemesis_pg import OwnPostgres

Fault = Callable[[Cluster, OwnPostgres, random.Random], Awaitable[dict[str, Any]]]


async def kill_one(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    name = rng.choice(sorted(cluster.members))
    cluster.kill(name)
    await cluster.start(name)
    return {"target": name}


async def kill_all(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    cluster.kill()
    await cluster.start()
    return {"target": "all"}


async def freeze(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    member = rng.choice(cluster.workers)
    held = LEASE_TTL + rng.uniform(1.0, 4.0)
    member.signal(signal.SIGSTOP)
    try:
        await asyncio.sleep(held)
    finally:
        member.signal(signal.SIGCONT)
    return {"target": member.name, "seconds": round(held, 1)}


async def _pg_restart(pg: OwnPostgres, mode: str, rng: random.Random) -> dict[str, Any]:
    down = rng.uniform(0.0, 3.0)
    await pg.stop(mode)
    await asyncio.sleep(down)  # the database stays away a while: the fault's length
    await pg.start()
    return {"down_s": round(down, 1)}


async def pg_fast(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    return await _pg_restart(pg, "fast", rng)


async def pg_immediate(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    return await _pg_restart(pg, "immediate", rng)


async def partition(cluster: Cluster, pg: OwnPostgres, rng: random.Random) -> dict[str, Any]:
    if cluster.link is None:
        raise RuntimeError("no network namespace for w1: the partition needs root and ip")
    held = rng.uniform(*cluster.partition_s)
    cluster.link.cut()
    try:
        await asyncio.sleep(held)
    finally:
        cluster.link.heal()
    return {"target": "w1", "seconds": round(held, 1)}


FAULTS: dict[str, Fault] = {
    "kill_one": kill_one,
    "kill_all": kill_all,
    "freeze": freeze,
    "pg_fast": pg_fast,
    "pg_immediate": pg_immediate,
    "partition": partition,
}
