"""The processes the nemesis hits: outlast as a small deployment on one Postgres.

Four processes: ``api`` (``outlast serve --no-worker``: HTTP only), ``serve`` (HTTP with its
embedded worker) and two workers (``outlast worker``). Clients use both HTTP processes,
so an HTTP process's death is a fault a client must ride out by going to the other one,
and runs execute in three processes, so a worker's death or partition leaves others to
take its runs over. The clocks are short, as in bench/recovery.py: a lease of
``LEASE_TTL`` seconds, renewed every third of it, and a reaper every half second; a
trial then measures recovery in seconds, not in minutes.

A member may run in a network namespace (``netns``): its connections to Postgres then
cross a link the nemesis can cut (tests/netns.py) and a relay on the host it can slow
(bench/nemesis_relay.py).

With ``disk`` (``--backend sqlite``), the deployment is one ``outlast serve`` with its
embedded worker and its SQLite store in that folder (a small tmpfs the nemesis fills):
SQLite is one process's store, so there is no one to take runs over but itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
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
    db_url: str | None  # None: SQLite in ``data_dir``
    no_worker: bool = False
    netns: str | None = None
    data_dir: Path | None = None
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
        store = ["--database-url", self.db_url] if self.db_url else []
        store += ["--data-dir", str(self.data_dir)] if self.data_dir else []
        cmd = [exe, self.command, *store, "--config", str(PEER_GRAPHS)]
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

    def __init__(
        self, pg: OwnPostgres | None, link: Link | None = None, *, disk: Path | None = None
    ) -> None:
        # ``link``: w1's own network, which the partition cuts; w1 reaches Postgres
        # through the relay at the link's host address, which the latency slows
        self.link = link
        self.disk = disk
        self.partition_s = (5.0, 120.0)
        self.latency_s = (5.0, 30.0)
        self.relay: Relay | None = None
        if pg is None:
            assert disk is not None, "no Postgres: the SQLite deployment needs its disk"
            self.members = {"serve": Member("serve", "serve", None, data_dir=disk)}
            return
        w1_url = pg.url()
        if link is not None:
            self.relay = Relay(link.host_ip, pg.port)
            w1_url = pg.url(link.host_ip).replace(f":{pg.port}/", f":{self.relay.port}/")
        self.members = {
            "api": Member("api", "serve", pg.url(), no_worker=True),
            "serve": Member("serve", "serve", pg.url()),
            "w1": Member("w1", "worker", w1_url, netns=link.ns if link else None),
            "w2": Member("w2", "worker", pg.url()),
        }

    @property
    def w1_address(self) -> str | None:
        """Where w1's sessions come from as Postgres sees them: the relay's address."""
        return self.link.host_ip if self.link is not None else None

    @property
    def bases(self) -> list[str]:
        return [m.base for m in self.members.values() if m.http]

    @property
    def workers(self) -> list[Member]:
        return [m for m in self.members.values() if m.command == "worker" or not m.no_worker]

    async def start(self, *names: str) -> None:
        if self.relay is not None:
            await self.relay.up()
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
        if self.relay is not None:
            self.relay.kill()


class Relay:
    """bench/nemesis_relay.py on the host at ``host``: w1's way to Postgres (``pg_port``),
    which ``slow`` delays. Not a member: it is the network, which no kill fault hits."""

    def __init__(self, host: str, pg_port: int) -> None:
        self.host, self.pg_port = host, pg_port
        self.port = free_port()
        self.proc: Process | None = None
        self.spells = 0

    async def up(self, limit: float = 10.0) -> None:
        if self.proc is not None and self.proc.proc.poll() is None:
            return
        script = str(BENCH / "nemesis_relay.py")
        cmd = [sys.executable, script, "--listen", f"{self.host}:{self.port}"]
        self.proc = Process([*cmd, "--target", f"{self.host}:{self.pg_port}"], {}, BENCH)
        self.spells = 0  # slow spells ended, each a line of the relay's output
        self.proc.name = "relay"
        deadline = time.monotonic() + limit
        while "relay listening" not in self.proc.output():
            self.proc.check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the relay did not listen:\n{self.proc.tail()}")
            await asyncio.sleep(0.05)

    def slow(self, on: bool) -> None:
        """Every chunk held 100 to 300 ms from now on (or no more)."""
        assert self.proc is not None
        self.proc.proc.send_signal(signal.SIGUSR1 if on else signal.SIGUSR2)
        self.spells += not on

    async def held(self, limit: float = 5.0) -> int | None:
        """How many chunks the last slow spell held, as the relay says once it ends."""
        assert self.proc is not None
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            said = re.findall(r"fast: (\d+) chunks held", self.proc.output())
            if len(said) >= self.spells:  # this spell's line, not an earlier one's
                return int(said[-1])
            await asyncio.sleep(0.05)
        return None

    def kill(self) -> None:
        if self.proc is not None:
            kill_tree(self.proc.proc)
            self.proc.log.close()
            self.proc = None
