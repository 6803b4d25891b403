"""A half-open connection to Postgres is noticed within ``pg_dead_peer_timeout``
(``outlast/store/pg_conninfo.py``, the listener's check in ``pg_listen.py``).

The link is really cut, not simulated in-process: the process under test runs in a
network namespace of its own, behind a router namespace (``tests/netns.py``: blackhole
routes in the router drop every packet of the flow, without a reset), and reaches
Postgres through a plain TCP relay on the host (the server listens on loopback only).

The process under test is a short script (``PROBE``) on a store made from ``Settings``
as ``outlast serve`` makes it, with a 3 s bound: left to the kernel, a statement would
wait about 15 minutes and a listener forever, so a generous deadline still tells the two
apart on a slow machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from outlast.graph.registry import GraphRegistry
from outlast.runtime.worker import Worker
from outlast.store.pg_conninfo import bounded, dead_peer_options
from outlast.vocabulary import RunStatus
from tests import netns
from tests.harness import GRAPHS, PATIENCE, REQUIRE_PG, eventually, make_settings, open_pg
from tests.netns import Link
from tests.util import new_run

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).parent.parent
BOUND = 3.0  # the tests' pg_dead_peer_timeout, seconds
NOTICED_WITHIN = 30.0  # ten times the bound, for a loaded machine; the kernel: ~15 min

PROBE = r"""
import asyncio, json, logging, os, socket, sys, time
from outlast.config import Settings
from outlast.store import make_store
from outlast.store.hub import QUEUE

def say(**fields):
    print(json.dumps(fields), flush=True)

async def command():
    return await asyncio.to_thread(sys.stdin.readline)

class Noticed(logging.Handler):
    def __init__(self):
        super().__init__()
        self.event, self.messages = asyncio.Event(), []
    def emit(self, record):
        self.messages.append(record.getMessage())
        self.event.set()

async def statement(store):
    async with store.pool.connection() as conn:
        await conn.execute("SELECT 1")
        say(ready=True)
        await command()  # the link is cut
        start = time.monotonic()
        try:
            await conn.execute("SELECT 1")
        except Exception as exc:
            say(failed=True, after=time.monotonic() - start, error=str(exc))
        else:
            say(failed=False)

async def idle(store):
    async with store.pool.connection() as conn:
        await conn.execute("SELECT 1")
        say(ready=True)
        await command()  # the link is cut
        start, fd = time.monotonic(), conn.pgconn.socket
        loop, dead = asyncio.get_running_loop(), asyncio.Event()
        loop.add_reader(fd, dead.set)  # the kernel's abort makes it readable
        await dead.wait()
        loop.remove_reader(fd)
        with socket.socket(fileno=os.dup(fd)) as sock:
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        say(dead=time.monotonic() - start, error=os.strerror(error))

async def listener(store):
    noticed = Noticed()
    logging.getLogger("outlast.store.pg_listen").addHandler(noticed)
    with store.hub.watch(QUEUE) as wake:
        say(ready=True)
        await command()  # the link is cut
        start = time.monotonic()
        await noticed.event.wait()
        say(noticed=time.monotonic() - start, error=noticed.messages[0])
        wake.clear()
        await command()  # the link is back
        start = time.monotonic()
        await wake.wait()
        say(woken=time.monotonic() - start)

async def main(mode, url, bound):
    store = make_store(Settings(database_url=url, pg_dead_peer_timeout=float(bound)))
    await store.open()
    await {"statement": statement, "idle": idle, "listener": listener}[mode](store)
    await command()  # the test kills this process: closing over a dead link may hang

asyncio.run(main(*sys.argv[1:]))
"""


def _need_netns() -> None:
    why = netns.missing()
    if why:
        if REQUIRE_PG:
            pytest.fail(f"OUTLAST_REQUIRE_POSTGRES=1 but network namespaces are out: {why}")
        pytest.skip(f"network namespaces need root and iproute2: {why}")


@pytest.fixture
def link() -> Iterator[Link]:
    """Client namespace ─ router namespace ─ host, on addresses of this test's own."""
    _need_netns()
    with netns.link() as made:
        yield made


class Relay:
    """Plain TCP from ``host:port`` to Postgres: the server listens on loopback only. It
    splices bytes and nothing else; the fault is in the network, not here."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self, host: str) -> int:
        self._server = await asyncio.start_server(self._accept, host, 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self._writers.append(client_w)
        server_r, server_w = await asyncio.open_connection(*self.target)
        self._writers.append(server_w)
        for r, w in ((client_r, server_w), (server_r, client_w)):
            task = asyncio.create_task(self._pipe(r, w))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await r.read(65536):
                w.write(data)
                await w.drain()
        w.close()

    async def close(self) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for w in self._writers:
            w.close()
            with contextlib.suppress(OSError):
                await w.wait_closed()
        await self._server.wait_closed()


@dataclass
class Probe:
    """``PROBE`` in the link's namespace: it says one JSON object per line, and takes a
    line on stdin as the go-ahead of its next step."""

    proc: asyncio.subprocess.Process

    async def said(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), PATIENCE)
        except TimeoutError:
            raise AssertionError(f"the probe said nothing within {PATIENCE:g} s") from None
        assert line, "the probe exited"
        said: dict[str, Any] = json.loads(line)
        return said

    async def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        await self.proc.stdin.drain()


@pytest.fixture
async def probe(link: Link, pg_url: str) -> AsyncIterator[Any]:
    """Starts ``PROBE`` in ``mode`` on the session's database through the link, with
    ``query`` added to its URL (the operator's own connection parameters)."""
    parts = urlsplit(pg_url)
    relay = Relay((parts.hostname or "127.0.0.1", parts.port or 5432))
    port = await relay.start(link.host_ip)
    netloc = (
        f"{parts.username}@{link.host_ip}:{port}" if parts.username else f"{link.host_ip}:{port}"
    )
    procs: list[asyncio.subprocess.Process] = []

    async def start(mode: str, query: str = "") -> Probe:
        url = urlunsplit(parts._replace(netloc=netloc, query=query))
        proc = await asyncio.create_subprocess_exec(
            *("ip", "netns", "exec", link.ns, sys.executable, "-c", PROBE),
            *(mode, url, str(BOUND)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        procs.append(proc)
        return Probe(proc)

    try:
        yield start
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        await relay.close()


@pytest.mark.slow  # a process in a namespace of its own
async def test_a_statement_on_a_half_open_connection_fails_within_the_bound(
    link: Link, probe: Any
) -> None:
    p = await probe("statement")
    assert await p.said() == {"ready": True}
    link.cut()
    await p.go()
    said = await p.said()
    assert said["failed"], said
    # tcp_user_timeout: the statement's bytes were never acknowledged
    assert "timed out" in said["error"].lower(), said
    assert said["after"] < NOTICED_WITHIN, said


@pytest.mark.slow  # a process in a namespace of its own
async def test_an_idle_connection_is_found_dead_within_the_bound(link: Link, probe: Any) -> None:
    """Keepalives: a pooled connection that waits for nothing is aborted by the kernel,
    and its next checkout fails at once instead of after the bound."""
    p = await probe("idle")
    assert await p.said() == {"ready": True}
    link.cut()
    await p.go()
    said = await p.said()
    assert said["error"] == "Connection timed out", said
    assert said["dead"] < NOTICED_WITHIN, said


@pytest.mark.slow  # a process in a namespace of its own
async def test_a_listener_notices_a_half_open_link_and_wakes_its_readers_once_it_heals(
    link: Link, probe: Any
) -> None:
    p = await probe("listener")
    assert await p.said() == {"ready": True}
    link.cut()
    await p.go()
    said = await p.said()
    assert said["noticed"] < NOTICED_WITHIN, said
    link.heal()
    await p.go()
    # Reconnected and listening again: notifications sent meanwhile were lost, so the
    # readers are woken to look at the tables.
    said = await p.said()
    assert "woken" in said, said


@pytest.mark.slow  # a process in a namespace of its own
async def test_the_listener_checks_a_silent_connection_itself(link: Link, probe: Any) -> None:
    """With keepalives and the user timeout off in the URL (the operator's choice wins,
    or a proxy in the path answers keepalives), the listener's round trip notices."""
    p = await probe("listener", "keepalives=0&tcp_user_timeout=0")
    assert await p.said() == {"ready": True}
    link.cut()
    await p.go()
    said = await p.said()
    assert "health check" in said["error"], said
    assert said["noticed"] < NOTICED_WITHIN, said


def test_the_urls_own_connection_parameters_win() -> None:
    url = "postgresql://u@db/outlast?keepalives_idle=30&tcp_user_timeout=0"
    params = dict(p.split("=", 1) for p in bounded(url, 10.0).split())
    assert params["keepalives_idle"] == "30"
    assert params["tcp_user_timeout"] == "0"
    assert params["keepalives"] == "1"
    assert params["keepalives_count"] == dead_peer_options(10.0)["keepalives_count"]


@pytest.mark.parametrize("bound", [2.0, 3.0, 10.0, 15.0, 60.0])
def test_keepalives_give_up_within_the_bound(bound: float) -> None:
    """Where the kernel does not count the user timeout against keepalives (it does on
    Linux), idle + interval × count alone must fit in the bound."""
    o = {k: int(v) for k, v in dead_peer_options(bound).items()}
    assert o["keepalives_idle"] + o["keepalives_interval"] * o["keepalives_count"] <= bound
    assert o["tcp_user_timeout"] == bound * 1000


async def test_a_worker_whose_notifications_stop_still_claims_by_polling(pg_url: str) -> None:
    worker_store = await open_pg(pg_url)
    other = await open_pg(pg_url, truncate=False)
    settings = make_settings(queue_poll=0.5)
    worker = Worker(worker_store, GraphRegistry.from_config(GRAPHS), settings)
    task = asyncio.create_task(worker.run())
    try:
        assert worker_store._listener is not None
        await worker_store._listener.stop()  # its LISTEN connection is gone, for good
        run, _ = await other.create_run(new_run())

        async def claimed() -> bool:
            got = await other.get_run(run.id)
            return got is not None and got.status != RunStatus.QUEUED

        await eventually(claimed, what="the claim of a run nobody was notified of")
    finally:
        worker.stop()
        await task
        await other.close()
        await worker_store.close()
