"""What bench/agents.py does around a level of runs in flight: the server's RSS and the
client's own loop lag while it runs, what the server still holds of the runs cut at the
bound (read back and cancelled), and the wait until the server is quiet again."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from typing import Any

from benchkit import med, r
from langgraph_sdk.client import LangGraphClient
from peerkit import Peer, TreeCpu, wait_for
from peers import describe

ACTIVE = ("pending", "running")
QUIET_CORES = 0.15


async def each(items: list[Any], fn: Any, width: int = 50) -> list[Any]:
    """``fn(item)`` for every item, ``width`` at a time; a failure is returned, not raised."""
    gate = asyncio.Semaphore(width)

    async def one(item: Any) -> Any:
        async with gate:
            return await fn(item)

    return await asyncio.gather(*(one(i) for i in items), return_exceptions=True)


async def leftovers(client: LangGraphClient, threads: list[str]) -> dict[str, Any]:
    """What the server still held of the runs cut at the bound (their statuses as it
    reports them), then each one still active cancelled, and how long it took them to go
    (both bounded: an overloaded server may answer slowly)."""
    statuses: Counter[str] = Counter()
    active: list[tuple[str, str]] = []
    for thread, runs in zip(threads, await each(threads, client.runs.list), strict=True):
        if isinstance(runs, BaseException):
            statuses[f"unreadable ({describe(runs)[:60]})"] += 1
            continue
        statuses.update([str(run["status"]) for run in runs] or ["no run"])
        active += [(thread, run["run_id"]) for run in runs if run["status"] in ACTIVE]
    await each(active, lambda pair: client.runs.cancel(*pair))
    t0 = time.monotonic()

    async def gone() -> bool:
        states = await each(active, lambda pair: client.runs.get(*pair))
        active[:] = [
            pair
            for pair, run in zip(list(active), states, strict=True)
            if isinstance(run, BaseException) or run["status"] in ACTIVE
        ]
        return not active

    cancelled = len(active)
    ended = await wait_for(gone, 60.0, step=1.0) if active else True
    return {
        "statuses": dict(statuses),
        "cancelled": cancelled,
        "cancel_s": r(time.monotonic() - t0, 1) if cancelled else 0.0,
        "still_active_after_60s": 0 if ended else len(active),
    }


class Watch:
    """While a level runs: the server tree's RSS every half second, and this client's own
    event-loop lag (the overshoot of a 50 ms sleep), since a client too slow to read its
    streams would show as token delay."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.samples: list[tuple[float, int]] = []
        self.lags: list[float] = []
        self.began = time.monotonic()
        self._tasks = [asyncio.create_task(self._rss()), asyncio.create_task(self._lag())]

    async def _rss(self) -> None:
        while True:
            self.samples.append((time.monotonic() - self.began, self.peer.rss()))
            await asyncio.sleep(0.5)

    async def _lag(self) -> None:
        while True:
            asked = time.monotonic()
            await asyncio.sleep(0.05)
            self.lags.append(1000 * (time.monotonic() - asked - 0.05))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def quiet(peer: Peer, limit: float = 180.0) -> float:
    """Seconds until the server's tree and database use under ``QUIET_CORES`` (over 2 s),
    at most ``limit``: a server still working off the last level's load would take the
    next server's cores."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        meter = TreeCpu(peer).start()
        await asyncio.sleep(2.0)
        used = meter.stop()
        if sum(used[k] for k in ("server", "postgres", "redis")) / used["elapsed"] < QUIET_CORES:
            break
    return r(time.monotonic() - t0, 1)


async def idle_rss(peer: Peer) -> int:
    samples = []
    for _ in range(6):
        samples.append(peer.rss())
        await asyncio.sleep(0.5)
    return int(med(samples))


def rss_figures(samples: list[tuple[float, int]], idle: int, level: int, duration: float) -> Any:
    """Idle and peak RSS, and per run in flight: peak − idle, and steady (the median over
    the second half of the time runs were started) − idle."""
    peak = max((b for _, b in samples), default=idle)
    steady = [b for t, b in samples if duration / 2 <= t <= duration] or [idle]
    return {
        "idle_mib": r(idle / 2**20, 1),
        "peak_mib": r(peak / 2**20, 1),
        "rss_peak_per_run_kib": r((peak - idle) / 1024 / level, 1),
        "rss_steady_per_run_kib": r((med(steady) - idle) / 1024 / level, 1),
    }
