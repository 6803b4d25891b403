"""How busy the machine was with something else while a benchmark ran.

The machine is shared: another tenant's build moves every figure. Load averages say little
(they count our own work too), so this samples, every few seconds, the CPU the whole
machine spent (``/proc/stat``) and the CPU of what the benchmark itself runs: this process
and its descendants (the servers under test), the Postgres server's own processes and the
backends of the benchmark's databases, and Redis. What is left over is the others'. A run
where the others took more than a fifth of a core on average is marked busy in its report.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from benchkit import cpu_seconds, process_tree
from peerkit import machine_busy_seconds

BUSY_CORES = 0.2


def _ours(prefix: str) -> dict[int, float]:
    pids = set(process_tree(os.getpid()))
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            comm = (entry / "comm").read_text().strip()
            # a client's backend names its database and the client's address; the
            # server's own processes (writer, checkpointer, autovacuum) serve everyone
            backend = "(" in title or "[local]" in title
            is_pg = comm.startswith("postgres") or title.startswith("postgres")
            if comm == "redis-server" or (is_pg and (prefix in title or not backend)):
                pids.add(int(entry.name))
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            out[pid] = cpu_seconds(pid)
    return out


class Watch:
    """Samples in the background from ``start`` to ``stop``; ``others_cores`` is the mean
    number of cores the rest of the machine used meanwhile."""

    def __init__(self, prefix: str = "outlast_bench_", every: float = 2.0) -> None:
        self.prefix, self.every = prefix, every
        self.others = 0.0
        self.elapsed = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        total, ours, at = machine_busy_seconds(), _ours(self.prefix), loop.time()
        while True:
            await asyncio.sleep(self.every)
            total2, ours2, at2 = machine_busy_seconds(), _ours(self.prefix), loop.time()
            mine = sum(t - ours.get(pid, 0.0) for pid, t in ours2.items())
            self.others += max(0.0, (total2 - total) - mine)
            self.elapsed += at2 - at
            total, ours, at = total2, ours2, at2

    def start(self) -> Watch:
        self._task = asyncio.create_task(self._loop())
        return self

    async def stop(self) -> dict[str, float | bool]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        cores = self.others / self.elapsed if self.elapsed else 0.0
        return {"others_cores": round(cores, 2), "busy": cores > BUSY_CORES}
