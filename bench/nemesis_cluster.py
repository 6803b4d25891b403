"""The processes the nemesis hits: outlast as a small deployment on one Postgres.

Four processes: ``api`` (``outlast serve --no-worker``: HTTP only), ``serve`` (HTTP with its
embedded worker) and two workers (``outlast worker``). Clients use both HTTP processes,
so an HTTP process's death is a fault a client must ride out by going to the other one,
and runs execute in three processes, so a worker's death or partition leaves others to
take its runs over. The clocks are short, as in bench/recovery.py: a lease of
``LEASE_TTL`` seconds, renewed every third of it, and a reaper every half second; a
trial then measures recovery in seconds, not in minutes.

A member may run in a network namespace (``netns``): its connections to Postgres then
cross a link the nemesis can cut or slow (bench/nemesis_net.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from benchkit import BENCH, Process, free_port, kill_tree, outlast_env
from nemesis_pg import OwnPostgres
from peerkit import PEER_GRAPHS

from tests.netns import Link

LEASE_TTL = 5.0
CLOCKS = {
    "OUTLAST_WORKER_LEASE_TTL": str(LEASE_TTL),
    "OUTLAST_WORKER_HEARTBEAT": str(round(LEASE_TTL / 3, 3)),
    "OUTLAST_REAPER_INTERVAL": "0.5",
    "OUTLAST_ACTIVITY_LEASE_TTL": "120",
    "OUTLAST_LOG_LEVEL": "warning",
}


@dataclass
class Member:
    """One process of the deployment, started again (same role, same port) at will."""

    name: str
    command: str  # serve | worker
    db_url: str
    no_worker: bool = False
    netns: str | None = None
    port: int = field(default_factory=free_port)
    proc: Process | None = None
    stopped: bool = False  # SIGSTOPped

    @property
    def http(self) -> bool:
        return self.command == "serve"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _cmd(self) -> list[str]:
        exe = str(Path(sys.executable).with_name("outlast"))
        cmd = [exe, self.command, "--database-url", self.db_url, "--config", str(PEER_GRAPHS)]
        cmd += ["--log-level", "warning", "--concurrency", "20", "--workers", "1"]
        if self.http:
            cmd += ["--port", str(self.port)]
            cmd += ["--no-worker"] if self.no_worker else []
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        return cmd

    def start(self) -> None:
        self.proc = Process(self._cmd(), outlast_env(CLOCKS), BENCH)
        self.proc.name = self.name
        self.stopped = False

    async def ready(self, limit: float = 60.0) -> None:
        """HTTP members answer ``/readyz``; a worker printed its banner."""
        deadline = time.monotonic() + limit
        assert self.proc is not None
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                self.proc.check_alive()
                if self.http:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(f"{self.base}/readyz")).status_code == 200:
                            return
                elif "outlast worker" in self.proc.output():
                    return
                await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {limit:.0f}s:\n{self.proc.tail()}")

    def kill(self) -> None:
        """SIGKILL to the process and every process it started (``ip netns exec`` execs,
        so the tree is the member's own)."""
        if self.proc is not None:
            kill_tree(self.proc.proc)
            self.proc.log.close()
            self.proc = None

    def signal(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.proc.poll() is None:
            self.proc.proc.send_signal(sig)
            self.stopped = sig == signal.SIGSTOP

    def tail(self) -> str:
        return self.proc.tail() if self.proc is not None else "(not running)"


class Cluster:
    """The deployment: ``members`` by name, and the HTTP ones' base URLs for clients."""

    def __init__(self, pg: OwnPostgres, link: Link | None = None) -> None:
        # ``link``: w1's own network, which the partition cuts; w1 reaches Postgres
        # at the link's host address
        self.link = link
        self.partition_s = (5.0, 120.0)
        w1_url = pg.url(link.host_ip) if link is not None else pg.url()
        self.members = {
            "api": Member("api", "serve", pg.url(), no_worker=True),
            "serve": Member("serve", "serve", pg.url()),
            "w1": Member("w1", "worker", w1_url, netns=link.ns if link else None),
            "w2": Member("w2", "worker", pg.url()),
        }

    @property
    def bases(self) -> list[str]:
        return [m.base for m in self.members.values() if m.http]

    @property
    def workers(self) -> list[Member]:
        return [m for m in self.members.values() if m.command == "worker" or not m.no_worker]

    async def start(self, *names: str) -> None:
        chosen = [self.members[n] for n in names] or list(self.members.values())
        for member in chosen:
            member.start()
        await asyncio.gather(*(m.ready() for m in chosen))

    def kill(self, *names: str) -> None:
        for name in names or tuple(self.members):
            self.members[name].kill()

    async def healthy(self) -> bool:
        """Every member runs, and every HTTP member answers ``/readyz``."""
        for member in self.members.values():
            if member.proc is None or member.proc.proc.poll() is not None or member.stopped:
                return False
        async with httpx.AsyncClient(timeout=2.0) as client:
            for base in self.bases:
                try:
                    if (await client.get(f"{base}/readyz")).status_code != 200:
                        return False
                except httpx.HTTPError:
                    return False
        return True

    def stop(self) -> None:
        for member in self.members.values():
            if member.stopped:
                member.signal(signal.SIGCONT)
            member.kill()
