"""The processes the Aegra nemesis hits: two Aegra servers in Redis mode, one Postgres and
one Redis of the bench's own.

Aegra's production shape: every process serves HTTP and executes runs (the API puts run
ids on a Redis list, worker coroutines in the same process take them under a Postgres
lease), so a client uses both, and a process's death leaves the other to serve, and, once
the dead one's leases ran out, to take its runs over. Both share one queue: its key is
named after the database (bench/peer_servers.py), and they have the same one.

``a2`` runs in a network namespace (tests/netns.py) and reaches Postgres and Redis at the
link's host address, where both listen: the partition cuts it from both, and from its
clients. It serves on the namespace's own address, which the bench reaches through the
link. The Redis is a ``redis-server`` of the bench's own on a free port, without
persistence (as the peers comparison runs it): the machine's shared Redis is left alone,
and nothing of a previous trial or bench run sits in it.

Aegra runs at its own clocks (lease 30 s, heartbeat 10 s, reaper every 15 s): its
production defaults, which bench/peers.py keeps too. The pools are bench/peers.py's
(``AEGRA_POOLS``).

This module duck-types what bench/nemesis_faults.py's ``kill_one``, ``kill_all`` and the
Postgres restarts use of ``nemesis_cluster.Cluster`` (``members``, ``kill``, ``start``), so
the same fault code strikes both deployments.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from benchkit import free_port
from peer_servers import Aegra
from peerkit import PEER_GRAPHS
from peers import AEGRA_POOLS

from tests.netns import Link

JOBS = 20  # runs at once per process: outlast's nemesis runs its processes at 20 too


class OwnRedis:
    """A ``redis-server`` on a free port, listening on ``hosts``, keeping nothing on disk."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="outlast-nemesis-redis-"))
        cmd = ["redis-server", "--port", str(self.port), "--bind", " ".join(hosts)]
        cmd += ["--save", "", "--appendonly", "no", "--protected-mode", "no"]
        cmd += ["--dir", str(self.folder), "--logfile", str(self.folder / "redis.log")]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)

    def url(self, host: str = "127.0.0.1") -> str:
        return f"redis://{host}:{self.port}/0"

    async def ready(self, limit: float = 10.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited ({self.proc.returncode})")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"redis-server not listening after {limit:.0f}s")

    def remove(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class AegraMember:
    """One Aegra process, started again (same port, same database and Redis) at will."""

    def __init__(self, name: str, python: Path, db: str, redis: str, host: str = "127.0.0.1",
                 netns: str | None = None) -> None:  # fmt: skip
        self.name, self.python, self.db, self.redis = name, python, db, redis
        self.host, self.netns = host, netns
        self.port = free_port()
        self.proc: Aegra | None = None
        self.stopped = False  # never SIGSTOPped here; read by the shared fault code

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self.proc = Aegra(
            self.python, self.db, self.redis, PEER_GRAPHS, jobs=JOBS, port=self.port,
            env=AEGRA_POOLS, host=self.host, netns=self.netns,
        )  # fmt: skip
        self.proc.name = self.name

    async def ready(self, limit: float = 120.0) -> None:
        assert self.proc is not None
        await self.proc.ready(limit)

    def kill(self) -> None:
        """SIGKILL to the process and every process it started, as a machine that loses
        power; its log and folder go with it."""
        if self.proc is not None:
            self.proc.kill_all()
            self.proc.log.close()
            Path(self.proc.log.name).unlink(missing_ok=True)
            shutil.rmtree(self.proc.folder, ignore_errors=True)
            self.proc = None

    def tail(self) -> str:
        return self.proc.tail() if self.proc is not None else "(not running)"


class AegraCluster:
    """Two Aegra processes: ``a1`` on the host, ``a2`` in ``link``'s namespace if given."""

    def __init__(self, python: Path, pg_url: str, redis: OwnRedis, link: Link | None) -> None:
        self.link = link
        self.partition_s = (5.0, 120.0)
        a2: dict[str, str | None] = {"host": "127.0.0.1", "netns": None}
        a2_db, a2_redis = pg_url, redis.url()
        if link is not None:
            a2 = {"host": link.client_ip, "netns": link.ns}
            a2_db = pg_url.replace("@127.0.0.1:", f"@{link.host_ip}:")
            a2_redis = redis.url(link.host_ip)
        self.members = {
            "a1": AegraMember("a1", python, pg_url, redis.url()),
            "a2": AegraMember("a2", python, a2_db, a2_redis, a2["host"] or "", a2["netns"]),
        }

    @property
    def bases(self) -> list[str]:
        return [m.base for m in self.members.values()]

    @property
    def cut_off(self) -> AegraMember:
        """The member the partition cuts."""
        return self.members["a2"]

    async def start(self, *names: str) -> None:
        chosen = [self.members[n] for n in names] or list(self.members.values())
        for member in chosen:
            member.start()
        await asyncio.gather(*(m.ready() for m in chosen))

    def kill(self, *names: str) -> None:
        for name in names or tuple(self.members):
            self.members[name].kill()

    async def healthy(self) -> bool:
        """Every member runs and answers ``/ready`` (its database and checkpointer
        answer)."""
        for member in self.members.values():
            if member.proc is None or member.proc.proc.poll() is not None:
                return False
        async with httpx.AsyncClient(timeout=2.0) as client:
            for base in self.bases:
                try:
                    if (await client.get(f"{base}/ready")).status_code != 200:
                        return False
                except httpx.HTTPError:
                    return False
        return True

    def stop(self) -> None:
        for member in self.members.values():
            member.kill()
