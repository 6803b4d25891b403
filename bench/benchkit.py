"""What every benchmark here shares: a throw-away database, the processes under test, a
lean HTTP and SSE client, percentiles, and what a process costs (RSS, CPU) from /proc.

Why a hand-written HTTP client: on two cores the client shares the CPU with the server and
Postgres, and httpx spends about a millisecond of CPU per request. At the rates the accept
and stream aims talk about (1,000 requests/s, 100 streams) that is most of a core taken
from the system being measured. ``RawHttp`` and ``SseStream`` speak just the HTTP/1.1 that
uvicorn answers (keep-alive, Content-Length or chunked bodies), for a few tens of µs each.
The other measurements use httpx or the LangGraph SDK, as a user would.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from psycopg import sql

from outlast.client.sse import Frames

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
GRAPHS_FILE = BENCH / "langgraph.json"
ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

# Every outlast process of the suite runs with these: the per-principal limits are for
# production clients, and would measure themselves here (200 requests/s, 1,000 runs in
# flight, 100 streams); retention must not prune events a measurement is about to read.
SUITE_ENV = {
    "OUTLAST_RATE_LIMIT": "0",
    "OUTLAST_MAX_RUNS_IN_FLIGHT": "0",
    "OUTLAST_MAX_STREAMS": "10000",
    "OUTLAST_POOL_MAX_SIZE": "20",
    "OUTLAST_EVENT_RETENTION_COUNT": "1000000",
}


# -- statistics --------------------------------------------------------------------------


def pct(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile: a value that was actually observed."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def r(value: float, digits: int = 2) -> float:
    return round(value, digits)


def latency_summary(ms: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": r(pct(ms, 50), 3),
        "p90_ms": r(pct(ms, 90), 3),
        "p99_ms": r(pct(ms, 99), 3),
        "max_ms": r(max(ms), 3) if ms else math.nan,
        "samples": len(ms),
    }


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "langgraph": version("langgraph"),
        "langgraph_api": version("langgraph-api"),
        "outlast": version("outlast"),
        "load_average_at_start": [r(x) for x in os.getloadavg()],  # 1, 5, 15 minutes
    }


# (option, full default, --quick default, help): the sizes of a benchmark's command line
Size = tuple[str, Any, Any, str]


def add_sizes(parser: argparse.ArgumentParser, sizes: Sequence[Size]) -> None:
    """One option per size; its help gives both defaults."""
    for name, full, quick, text in sizes:
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=type(full), help=f"{text} (default {full}; --quick {quick})")


def apply_sizes(args: argparse.Namespace, sizes: Sequence[Size]) -> None:
    """A size not given takes its ``--quick`` default or its full one."""
    for name, full, quick, _ in sizes:
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the database ------------------------------------------------------------------------


async def admin(url: str, statement: sql.Composed) -> None:
    async with await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=5
    ) as conn:
        await conn.execute(statement)


@contextlib.asynccontextmanager
async def temp_database(admin_url: str) -> AsyncIterator[str]:
    """A fresh database next to ``admin_url``, dropped afterwards whatever happens: every
    measurement starts from empty tables and leaves nothing behind."""
    name = f"outlast_bench_{os.urandom(4).hex()}"
    try:
        await admin(admin_url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        raise SystemExit(
            f"error: Postgres is not reachable at {admin_url}:\n  {exc}\n"
            "Start it or pass --database-url."
        ) from None
    try:
        yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
    finally:
        await admin(
            admin_url,
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
        )


async def query(url: str, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(statement, params)
        return await cur.fetchall() if cur.description else []


async def status_counts(conn: psycopg.AsyncConnection[Any]) -> dict[str, int]:
    cur = await conn.execute("SELECT status, count(*) FROM outlast_runs GROUP BY status")
    return {status: int(n) for status, n in await cur.fetchall()}


# -- the processes under test ------------------------------------------------------------


class Process:
    """A server under test as a subprocess in its own session (Ctrl-C reaches only the
    suite, which stops it); its output goes to a file shown when it fails."""

    name = "process"

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path) -> None:
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL: no drain, no goodbye, as a machine that loses power."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, grace: float = 15.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                print(f"{self.name} ignored SIGTERM for {grace:.0f}s; killing it")
                self.kill()
        self.log.close()
        with contextlib.suppress(OSError):
            os.unlink(self.log.name)


def outlast_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without the caller's own ``OUTLAST_*`` settings, plus the suite's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("OUTLAST_")}
    return base | SUITE_ENV | (extra or {})


class Outlast(Process):
    """``outlast serve`` (API, with or without its embedded worker) or ``outlast worker``."""

    def __init__(
        self,
        db_url: str,
        *,
        command: str = "serve",
        concurrency: int = 10,
        no_worker: bool = False,
        env: dict[str, str] | None = None,
        workers: int = 1,
        config: Path = GRAPHS_FILE,
        port: int | None = None,
    ) -> None:
        self.name = f"outlast {command}"
        self.port = (port or free_port()) if command == "serve" else 0
        self.base = f"http://127.0.0.1:{self.port}"
        exe = str(Path(sys.executable).with_name("outlast"))
        cmd = [exe, command, "--database-url", db_url, "--config", str(config)]
        cmd += ["--log-level", "warning", "--concurrency", str(concurrency)]
        # one process unless asked: the figures of one process stay comparable across runs
        cmd += ["--workers", str(workers)]
        if command == "serve":
            cmd += ["--port", str(self.port)] + (["--no-worker"] if no_worker else [])
        super().__init__(cmd, outlast_env(env), BENCH)

    async def ready(self, limit: float = 60.0) -> None:
        """A server answers ``/readyz`` (it migrated the database first); a worker printed
        its banner, which it does once its store is open and its graphs are loaded."""
        deadline = time.monotonic() + limit
        async with httpx.AsyncClient(timeout=5.0) as client:
            while time.monotonic() < deadline:
                self.check_alive()
                if self.port:
                    with contextlib.suppress(httpx.TransportError):
                        if (await client.get(f"{self.base}/readyz")).status_code == 200:
                            return
                elif "outlast worker" in self.output():
                    return
                await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {limit:.0f}s:\n{self.tail()}")


class DevServer(Process):
    """LangGraph's local dev server (``langgraph dev``, the in-memory runtime) on graphs of
    bench/graphs.py (or ``source``), or on the given ``{name: "path:attr"}`` of absolute
    paths. It keeps its state in ``.langgraph_api/`` of its working directory, so it runs
    in a temporary folder with a langgraph.json of absolute paths."""

    name = "langgraph dev"

    def __init__(
        self,
        graphs: Sequence[str] | Mapping[str, str],
        jobs: int,
        *,
        source: Path = BENCH / "graphs.py",
        port: int | None = None,
        folder: Path | None = None,
    ) -> None:
        # A given folder outlives the server (a restart reads what the last one saved
        # there); a temporary one goes with it.
        self.folder = None if folder else tempfile.TemporaryDirectory(prefix="outlast-bench-dev-")
        folder = folder or Path(self.folder.name)  # type: ignore[union-attr]
        if isinstance(graphs, Mapping):
            specs = dict(graphs)
        else:
            specs = {g: f"{source}:{g}" for g in graphs}
        folders = {str(Path(spec.rsplit(":", 1)[0]).parent) for spec in specs.values()}
        config = {"graphs": specs, "dependencies": sorted(folders)}
        (folder / "langgraph.json").write_text(json.dumps(config, indent=2))
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        exe = str(Path(sys.executable).with_name("langgraph"))
        cmd = [exe, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--config", str(folder / "langgraph.json")]
        cmd += ["--n-jobs-per-worker", str(jobs), "--server-log-level", "WARNING"]
        env = outlast_env(
            {
                "LANGGRAPH_CLI_NO_ANALYTICS": "1",
                "LANGGRAPH_NO_VERSION_CHECK": "true",
                "LANGSMITH_TRACING": "false",
                "LANGCHAIN_TRACING_V2": "false",
            }
        )
        super().__init__(cmd, env, folder)

    async def ready(self, limit: float = 90.0) -> None:
        deadline = time.monotonic() + limit
        async with httpx.AsyncClient(timeout=5.0) as client:
            while time.monotonic() < deadline:
                self.check_alive()
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(f"{self.base}/ok")).status_code == 200:
                        return
                await asyncio.sleep(0.2)
        raise RuntimeError(f"langgraph dev not ready after {limit:.0f}s:\n{self.tail()}")

    def stop(self, grace: float = 15.0) -> None:
        # The CLI may start helpers in its session: signal the whole group it leads.
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait)
        super().stop()
        if self.folder is not None:
            self.folder.cleanup()


# -- what a process costs ----------------------------------------------------------------

_TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    """Resident set size now (``VmRSS``): the memory the process really holds."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # the name may contain spaces
    return (int(fields[11]) + int(fields[12])) / _TICKS


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants now, from the parent pids in /proc: a server that
    forks workers (``--workers N``, uvicorn's workers) costs what all of them cost."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                parent = int(stat[stat.rindex(")") + 2 :].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def kill_tree(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a process, its process group and every descendant that left the group, at
    once, as a machine that loses power; returns when none of them runs."""
    victims = process_tree(proc.pid) if proc.poll() is None else []
    if victims:  # only while the leader lives: a reaped pid may be someone else's now
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(p) for p in victims):
        time.sleep(0.05)  # children reparented to init, reaped there


def _running(pid: int) -> bool:
    """The process exists and is not a zombie (this machine's init may reap late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def postgres_pids(database: str) -> list[int]:
    """The Postgres backends connected to ``database`` (a backend's process title names its
    database), so that other users of the same server are not counted."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if title.startswith("postgres:") and f" {database} " in title:
                    pids.append(int(entry.name))
    return pids


@dataclass
class CpuMeter:
    """CPU seconds spent by some processes, by this one (``client``) and by the Postgres
    backends of one database between ``start`` and ``stop``. A backend that exited in
    between is missed (the pools here keep theirs open), and so is the server's shared
    work (WAL writer, checkpointer, autovacuum)."""

    pids: dict[str, int]
    db_url: str | None = None
    _before: dict[str, float] = field(default_factory=dict)
    _pg_before: dict[int, float] = field(default_factory=dict)
    _client: float = 0.0

    def start(self) -> CpuMeter:
        self._before = {k: cpu_seconds(p) for k, p in self.pids.items()}
        self._pg_before = self._postgres()
        self._client = time.process_time()
        return self

    def _postgres(self) -> dict[int, float]:
        out: dict[int, float] = {}
        if self.db_url is None:
            return out
        for pid in postgres_pids(urlsplit(self.db_url).path.lstrip("/")):
            with contextlib.suppress(OSError):
                out[pid] = cpu_seconds(pid)
        return out

    def stop(self) -> dict[str, float]:
        used = {k: cpu_seconds(p) - self._before[k] for k, p in self.pids.items()}
        used["client"] = time.process_time() - self._client
        if self.db_url is not None:
            after = self._postgres()
            used["postgres"] = sum(t - self._pg_before.get(pid, 0.0) for pid, t in after.items())
        return used


# -- a lean HTTP/1.1 client --------------------------------------------------------------


class RawHttp:
    """One keep-alive HTTP/1.1 connection: request, then read the whole response."""

    def __init__(self, base: str) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode() if body is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"host: {self.host}:{self.port}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        if body is not None:
            head += ["content-type: application/json", f"content-length: {len(payload)}"]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
        status, response_headers = await read_head(self.reader)
        if "content-length" in response_headers:
            data = await self.reader.readexactly(int(response_headers["content-length"]))
        else:
            data = b"".join([chunk async for chunk in read_chunks(self.reader)])
        if response_headers.get("connection", "").lower() == "close":
            await self.close()
        return status, response_headers, data

    async def json(self, method: str, path: str, body: Any = None, **headers: str) -> Any:
        status, _, data = await self.request(method, path, body, headers)
        if status >= 300:
            raise RuntimeError(f"{method} {path} answered {status}: {data[:300]!r}")
        return json.loads(data)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            key, value = line.split(":", 1)
            headers[key.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers


async def read_chunks(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The body of a ``Transfer-Encoding: chunked`` response, chunk by chunk."""
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        chunk = await reader.readexactly(size)
        await reader.readexactly(2)
        yield chunk


@dataclass(frozen=True, slots=True)
class SseEvent:
    received: float  # time.time() when the chunk that completed it arrived
    id: str | None
    event: str | None
    data: str | None
    retry: bool

    def payload(self) -> dict[str, Any]:
        return json.loads(self.data or "null")  # type: ignore[no-any-return]


class SseStream:
    """One ``GET /v1/runs/{id}/events`` connection, parsed as Server-Sent Events."""

    def __init__(self, base: str, path: str, headers: dict[str, str] | None = None) -> None:
        self.http = RawHttp(base)
        self.path = path
        self.headers = headers or {}

    async def events(self) -> AsyncGenerator[SseEvent, None]:
        http = self.http
        http.reader, http.writer = await asyncio.open_connection(http.host, http.port)
        head = [f"GET {self.path} HTTP/1.1", f"host: {http.host}", "accept: text/event-stream"]
        head += [f"{k}: {v}" for k, v in self.headers.items()]
        http.writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        status, headers = await read_head(http.reader)
        if status != 200:
            raise RuntimeError(f"GET {self.path} answered {status}")
        if headers.get("transfer-encoding") != "chunked":
            raise RuntimeError(f"GET {self.path}: expected a chunked stream, got {headers}")
        buffer = b""
        reader = Frames()
        try:
            async for chunk in read_chunks(http.reader):
                received = time.time()
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    frame = reader.feed(raw.rstrip(b"\r").decode())
                    if frame is not None:
                        yield SseEvent(
                            received, frame.id, frame.event, frame.data, frame.retry is not None
                        )
        finally:
            await http.close()


def envelope_time(payload: dict[str, Any]) -> float:
    """The event's ``time`` (the database's clock when it was appended) as epoch seconds."""
    return dt.datetime.fromisoformat(payload["time"]).timestamp()


async def run_concurrently(n: int, worker: Any) -> list[Any]:
    """``n`` copies of ``worker(i)`` at once; the first failure cancels the rest."""
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(worker(i)) for i in range(n)]
    return [t.result() for t in tasks]
