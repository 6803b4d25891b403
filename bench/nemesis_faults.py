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
- ``latency``: every chunk between ``w1`` and Postgres, both ways, held 100 to 300 ms
  by the relay it reaches Postgres through (bench/nemesis_relay.py) for a while
  (``Cluster.latency_s``), then sent at once again: its queries, renewals and claims
  take a round trip of about half a second instead of a fraction of a millisecond.

On SQLite (``--backend sqlite``: one process, its store on a small tmpfs), ``kill_one``
and ``kill_all`` are the SIGKILL of that process, and:

- ``full_disk``: a file written into the tmpfs until the disk is full (ENOSPC); then
  writes through the native face until one is refused with a ``503`` "Store full" (the
  fault says whether one was, and after what), the disk kept full a few seconds more
  while the runs meet it (their writes fail: they stop, and are taken back once their
  lease runs out), then the file deleted.
"""

from __future__ import annotations

import asyncio
import collections
import random
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from nemesis_cluster import LEASE_TTL, Cluster
from nemesis_pg import OwnPostgres
from prometheus_client.parser import text_string_to_metric_families

from tests.disks import fill

# ``pg`` is None on SQLite, where no fault needs it
Fault = Callable[[Cluster, OwnPostgres | None, random.Random], Awaitable[dict[str, Any]]]


async def kill_one(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    name = rng.choice(sorted(cluster.members))
    cluster.kill(name)
    await cluster.start(name)
    return {"target": name}


async def kill_all(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    cluster.kill()
    await cluster.start()
    return {"target": "all"}


async def freeze(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    member = rng.choice(cluster.workers)
    held = LEASE_TTL + rng.uniform(1.0, 4.0)
    member.signal(signal.SIGSTOP)
    try:
        await asyncio.sleep(held)
    finally:
        member.signal(signal.SIGCONT)
    return {"target": member.name, "seconds": round(held, 1)}


async def _pg_restart(pg: OwnPostgres | None, mode: str, rng: random.Random) -> dict[str, Any]:
    if pg is None:
        raise RuntimeError("no Postgres to restart: a Postgres fault on SQLite")
    down = rng.uniform(0.0, 3.0)
    await pg.stop(mode)
    await asyncio.sleep(down)  # the database stays away a while: the fault's length
    await pg.start()
    return {"down_s": round(down, 1)}


async def pg_fast(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    return await _pg_restart(pg, "fast", rng)


async def pg_immediate(
    cluster: Cluster, pg: OwnPostgres | None, rng: random.Random
) -> dict[str, Any]:
    return await _pg_restart(pg, "immediate", rng)


async def partition(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    if cluster.link is None:
        raise RuntimeError("no network namespace for w1: the partition needs root and ip")
    held = rng.uniform(*cluster.partition_s)
    cluster.link.cut()
    try:
        await asyncio.sleep(held)
    finally:
        cluster.link.heal()
    return {"target": "w1", "seconds": round(held, 1)}


async def latency(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    if cluster.relay is None:
        raise RuntimeError("no relay for w1: the latency needs its network namespace")
    held = rng.uniform(*cluster.latency_s)
    cluster.relay.slow(True)
    try:
        await asyncio.sleep(held)
    finally:
        cluster.relay.slow(False)
    return {"target": "w1", "seconds": round(held, 1), "chunks_held": await cluster.relay.held()}


# A signal's payload near its limit (``OUTLAST_MAX_ANSWER_BYTES``, 64 kB): each write
# accepted on the full disk takes room SQLite had already taken (its WAL), so a few of
# them use that room up and the next is refused, instead of small writes fitting in it
# for as long as the disk stays full.
BULKY = {"payload": "x" * 48_000}


async def refused_write(base: str, limit: float) -> tuple[float | None, collections.Counter[str]]:
    """When a write through the native face was first refused as the store's being full
    (None: not within ``limit`` seconds), and every answer seen until then."""
    seen: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + limit
    async with httpx.AsyncClient(timeout=10.0) as client:
        while time.monotonic() < deadline:
            try:
                got = await client.post(f"{base}/v1/signals/nemesis-disk", json=BULKY)
                title = got.json().get("title", "") if got.status_code >= 400 else ""
                seen[f"{got.status_code} {title}".strip()] += 1
                if got.status_code == 503 and title == "Store full":
                    return time.monotonic(), seen
            except (httpx.HTTPError, ValueError) as exc:
                seen[type(exc).__name__] += 1
            await asyncio.sleep(0.05)
    return None, seen


async def _stopped_by_store(base: str) -> float:
    """Runs whose execution stopped on a store failure, as the process counts them: the
    runs the full disk met, not only the writes the fault made."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        text = (await client.get(f"{base}/metrics")).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "outlast_worker_runs_finished_total"
        and sample.labels.get("outcome") == "store_failed"
    )


async def full_disk(cluster: Cluster, pg: OwnPostgres | None, rng: random.Random) -> dict[str, Any]:
    if cluster.disk is None:
        raise RuntimeError("no disk to fill: full_disk is a fault of the SQLite deployment")
    held = rng.uniform(2.0, 6.0)
    stopped = await _stopped_by_store(cluster.bases[0])
    began = time.monotonic()
    filler = fill(cluster.disk)
    try:
        refused_at, seen = await refused_write(cluster.bases[0], 20.0)
        # the disk stays full a while once writes fail: the runs meet it meanwhile
        await asyncio.sleep(held if refused_at is not None else 0.0)
    finally:
        filler.unlink()
    out: dict[str, Any] = {"target": "disk", "seconds": round(time.monotonic() - began, 1)}
    out["refused_503"] = refused_at is not None
    out["runs_stopped"] = await _stopped_by_store(cluster.bases[0]) - stopped
    out["until_refused_s"] = None if refused_at is None else round(refused_at - began, 2)
    return out | {"answers": dict(seen)}


FAULTS: dict[str, Fault] = {
    "kill_one": kill_one,
    "kill_all": kill_all,
    "freeze": freeze,
    "pg_fast": pg_fast,
    "pg_immediate": pg_immediate,
    "partition": partition,
    "latency": latency,
    "full_disk": full_disk,
}
# What each deployment can suffer: SQLite has no Postgres and no second process to cut.
POSTGRES_FAULTS = ("kill_one", "kill_all", "freeze", "pg_fast", "pg_immediate", "partition",
                   "latency")  # fmt: skip
SQLITE_FAULTS = ("kill_one", "full_disk")
