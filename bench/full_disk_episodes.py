"""One run that meets a full disk on each of its attempts: does it complete?

    .venv/bin/python bench/full_disk_episodes.py --episodes 3

What the nemesis's ``full_disk`` does once per trial, done ``--episodes`` times to one
long run of ``slow`` (ten ticks of 3 s) on the SQLite deployment of bench/nemesis.py:
fill the tmpfs, write until a write is refused (``503`` "Store full"), keep it full 3 s,
free it, and wait for the run to be taken back (its worker gives it back once the disk
has room, a claim). It prints the run's end and its lifecycle events, and exits 1 unless the
run completed.

Why apart from the nemesis: a trial's runs each meet one fault; this is the case where
one run meets several. It found (issue 32) that a run meeting the full disk on each of
its ``OUTLAST_MAX_ATTEMPTS`` attempts ended ``failed`` with ``worker_lost``, its worker
never lost; a store failure now costs no attempt (outlast/runtime/giveback.py,
bench/README.md's nemesis section).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

import httpx

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]  # tests/netns.py, for the cluster

from nemesis_cluster import LEASE_TTL, Cluster  # noqa: E402
from nemesis_faults import refused_write  # noqa: E402

from tests.disks import fill, small_disk  # noqa: E402

LIFECYCLE = "SELECT seq, type, data FROM outlast_events WHERE run_id = ? AND type LIKE 'run.%'"


async def episodes(base: str, disk: Path, run_id: str, count: int) -> None:
    async with httpx.AsyncClient(timeout=10.0) as client:
        for n in range(count):
            filler = fill(disk)
            try:
                refused_at, seen = await refused_write(base, 20.0)
                await asyncio.sleep(3.0)
            finally:
                filler.unlink()
            row = (await client.get(f"{base}/v1/runs/{run_id}")).json()
            print(f"episode {n}: refused {refused_at is not None} {dict(seen)};", end=" ")
            print(f"run {row['status']}, attempts {row['attempts']}", flush=True)
            await asyncio.sleep(LEASE_TTL + 4.0)  # the lease runs out; requeued, claimed


async def main(opts: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="outlast-episodes-"))
    with small_disk(work / "disk", 32) as disk:
        cluster = Cluster(None, disk=disk)
        await cluster.start()
        base = cluster.bases[0]
        try:
            conf = {"record": str(work / "record.txt"), "delay": 0.5, "ticks": 10, "tick": 3.0}
            body = {"graph": "slow", "input": {"key": "k"}, "config": {"configurable": conf}}
            async with httpx.AsyncClient(timeout=70.0) as client:
                run = (await client.post(f"{base}/v1/runs", json=body)).json()
                await asyncio.sleep(3.0)  # inside its ticks
                await episodes(base, disk, run["id"], opts.episodes)
                end = (await client.get(f"{base}/v1/runs/{run['id']}/result?wait=60")).json()
        finally:
            cluster.stop()
        print(json.dumps({k: end.get(k) for k in ("status", "attempts", "error")}))
        conn = sqlite3.connect(disk / "outlast.db")
        for seq, kind, data in conn.execute(LIFECYCLE + " ORDER BY seq", (run["id"],)):
            print(seq, kind, data[:160])
        conn.close()
    return 0 if end.get("status") == "completed" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    sys.exit(asyncio.run(main(parser.parse_args())))
