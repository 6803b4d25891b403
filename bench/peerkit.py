"""The servers of the peers comparison, seen alike: each is a ``Peer`` that starts (and
starts again, on the same port, after a SIGKILL), names every process it runs and the
database it uses, and is driven through ``langgraph_sdk`` only, as its users drive it.

Why one shape for all: the comparison is only fair if every server gets the same client,
the same graphs (bench/peers/langgraph.json), the same accounting of what it costs (every
process of its tree, the Postgres backends of its own database, Redis where it uses it)
and the same kill (SIGKILL to every process it started, as a machine that loses power).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchkit import (
    BENCH,
    cpu_seconds,
    free_port,
    kill_tree,
    postgres_pids,
    process_tree,
    rss_bytes,
)

PEERS = BENCH / "peers"
_TICKS = os.sysconf("SC_CLK_TCK")
PEER_GRAPHS = PEERS / "langgraph.json"
TERMINAL = frozenset({"success", "error", "timeout", "interrupted"})


def peer_graphs() -> dict[str, str]:
    """The graphs of bench/peers/langgraph.json as ``{name: "absolute path:attr"}``: what
    a server that takes no langgraph.json of ours (``langgraph dev``) is given."""
    graphs = json.loads(PEER_GRAPHS.read_text())["graphs"]
    return {name: str(PEERS / spec.removeprefix("./")) for name, spec in graphs.items()}


@dataclass
class Peer:
    """One server under comparison. ``make(port)`` starts its process(es) on ``port``;
    ``db`` is the database whose Postgres backends it costs, ``redis`` whether it uses the
    machine's Redis (whose CPU is then its cost too)."""

    name: str
    make: Callable[[int], Any]
    db: str | None = None
    redis: bool = False
    durable: bool = True
    port: int = field(default_factory=free_port)
    proc: Any = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.proc = self.make(self.port)
        await self.proc.ready()

    def pids(self) -> list[int]:
        return process_tree(self.proc.pid) if self.proc is not None else []

    def kill(self) -> None:
        """SIGKILL to every process of it; nothing of it runs when this returns."""
        if self.proc is not None:
            kill_tree(self.proc.proc)
            self.proc.log.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
            self.proc = None

    def rss(self) -> int:
        total = 0
        for pid in self.pids():
            with contextlib.suppress(OSError, RuntimeError):
                total += rss_bytes(pid)
        return total


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy since boot (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _TICKS


def redis_pid() -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == "redis-server":
                    return int(entry.name)
    return None


class TreeCpu:
    """CPU seconds between ``start`` and ``stop`` of a peer's processes (a process that
    appeared in between counts from zero), of its database's Postgres backends, and of
    Redis if it uses it (all of Redis: nothing else here uses it meanwhile)."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.redis = redis_pid() if peer.redis else None

    def _sample(self) -> dict[str, dict[int, float]]:
        out: dict[str, dict[int, float]] = {"server": {}, "postgres": {}, "redis": {}}
        pg = postgres_pids(urlsplit(self.peer.db).path.lstrip("/")) if self.peer.db else []
        groups = {"server": self.peer.pids(), "postgres": pg}
        if self.redis is not None:
            groups["redis"] = [self.redis]
        for part, pids in groups.items():
            for pid in pids:
                with contextlib.suppress(OSError):
                    out[part][pid] = cpu_seconds(pid)
        return out

    def start(self) -> TreeCpu:
        self.before = self._sample()
        self.machine = machine_busy_seconds()
        self.client = time.process_time()
        self.began = time.monotonic()
        return self

    def stop(self) -> dict[str, float]:
        """CPU seconds per part, with ``client`` (this process: the SDK) and ``machine``
        (every core's busy time, anything's): what the parts leave of the machine is
        what a second server process could have had."""
        after = self._sample()
        used = {}
        for part, now in after.items():
            then = self.before[part]
            used[part] = sum(t - then.get(pid, 0.0) for pid, t in now.items())
        used["client"] = time.process_time() - self.client
        used["machine"] = machine_busy_seconds() - self.machine
        used["elapsed"] = time.monotonic() - self.began
        return used


@dataclass
class Loop:
    """What a closed loop did: completed runs/s, each completed run's latency (ms), and
    the failures by their first line."""

    rate: float
    latencies: list[float]
    errors: collections.Counter[str]

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _reason(exc: BaseException) -> str:
    """A failure's first line, with ids blanked so that alike failures count together."""
    response = getattr(exc, "response", None)
    if response is not None:
        text = f"HTTP {response.status_code}: {response.text[:120]}"
    else:
        lines = str(exc).strip().splitlines()
        text = f"{type(exc).__name__}: {lines[0][:120] if lines else ''}"
    return _UUID.sub("…", text)


async def closed_loop(
    call: Callable[[], Awaitable[None]], runs: int, inflight: int, cap: float
) -> Loop:
    """``inflight`` clients, each starting its next run when its last one ended, until
    ``runs`` were started or ``cap`` seconds passed: (completed runs/s, each completed
    run's latency in ms, failures). A cap keeps a slow peer from stretching the suite; the
    rate counts only what completed, over the time until the last completion."""
    started = 0
    latencies: list[float] = []
    errors: collections.Counter[str] = collections.Counter()
    begin = time.monotonic()
    end = begin

    async def client() -> None:
        nonlocal started, end
        while started < runs and time.monotonic() - begin < cap:
            started += 1
            t0 = time.monotonic()
            try:
                await call()
            except Exception as exc:
                errors[_reason(exc)] += 1
                continue
            end = time.monotonic()
            latencies.append(1000 * (end - t0))

    await asyncio.gather(*(client() for _ in range(inflight)))
    elapsed = max(end - begin, 1e-9)
    return Loop(len(latencies) / elapsed, latencies, errors)


async def wait_for(check: Callable[[], Awaitable[bool]], limit: float, step: float = 0.1) -> bool:
    """Poll ``check`` until it holds or ``limit`` seconds passed (a measurement's bound,
    not a test's: the outcome is reported either way)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if await check():
                return True
        await asyncio.sleep(step)
    return False


def record_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
