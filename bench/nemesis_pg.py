"""The nemesis's own Postgres: a cluster it creates, restarts at will, and removes.

Why not the machine's server: restarting it under load is one of the faults, and the
machine's server is shared (by the test suite running beside, by other benches); a fault
must hit only what the trial is about. A cluster of our own also listens where we say,
which a worker in its own network namespace needs (the machine's server listens on
127.0.0.1 only, which a namespace cannot reach).

The cluster runs with the machine's Postgres binaries (``pg_config --bindir``, or the
newest under /usr/lib/postgresql). Postgres refuses to run as root, so as root it runs as
the ``postgres`` user (``runuser``); its folder is handed to that user. Authentication is
``trust`` on every address it listens on: the cluster lives for one bench run and holds
nothing but what the bench writes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchkit import free_port


def bindir() -> Path:
    """Where the machine's Postgres programs are."""
    with_config = shutil.which("pg_config")
    if with_config:
        found = subprocess.run([with_config, "--bindir"], capture_output=True, text=True)
        candidate = Path(found.stdout.strip())
        if (candidate / "pg_ctl").exists():
            return candidate
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parts)
    if not versions:
        raise SystemExit("error: no Postgres binaries (pg_ctl) found on this machine")
    return versions[-1].parent


class OwnPostgres:
    """A Postgres cluster in a temporary folder, on a free port, listening on ``hosts``."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.bin = bindir()
        self.hosts = hosts
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="outlast-nemesis-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"
        self._root = os.geteuid() == 0

    def url(self, host: str = "127.0.0.1", database: str = "postgres") -> str:
        return f"postgresql://postgres@{host}:{self.port}/{database}"

    async def _run(self, *args: str, check: bool = True) -> str:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self._root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        out, _ = await proc.communicate()
        text = out.decode(errors="replace")
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}):\n{text}")
        return text

    async def create(self) -> None:
        if self._root:
            shutil.chown(self.folder, "postgres", "postgres")
        await self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust")
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 0.0.0.0/0 trust\n")
        await self.start()

    async def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses={','.join(self.hosts)}"
            " -c max_connections=300 -c shared_buffers=64MB"
        )
        await self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options,
                        "-w", "start")  # fmt: skip

    async def stop(self, mode: str = "fast") -> None:
        """``fast`` ends every session and checkpoints; ``immediate`` is a crash: no
        checkpoint, recovery from the WAL at the next start."""
        await self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    async def restart(self, mode: str) -> None:
        await self.stop(mode)
        await self.start()

    async def remove(self) -> None:
        await self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop",
                        check=False)  # fmt: skip
        shutil.rmtree(self.folder, ignore_errors=True)
