"""Real ``outlast`` processes (workers, servers) for crash and fault tests, killed with
real signals, and the checks of a run's log after them. Everything else shared (waiting
on conditions, the in-process server, HTTP helpers) is in ``tests/harness.py``."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from outlast import processes
from outlast.store import Event, Run, Store
from tests.harness import GRAPHS, PATIENCE, NotYet, eventually, eventually_blocking

FAST_LEASES = {
    "OUTLAST_WORKER_LEASE_TTL": "1.5",
    "OUTLAST_WORKER_HEARTBEAT": "0.3",
    "OUTLAST_REAPER_INTERVAL": "0.3",
    "OUTLAST_QUEUE_POLL": "0.5",
    "OUTLAST_SHUTDOWN_GRACE": "5",
    # One process per command, as the tests that kill "the server" expect (a pid to
    # SIGKILL); tests of --workers ask for more.
    "OUTLAST_WORKERS": "1",
}


def _spawn(
    command: list[str],
    db_url: str,
    log: Path,
    env: dict[str, str],
    sock: socket.socket | None = None,
) -> Any:
    """``outlast <command>`` as a real process on the test graphs, logging to ``log``
    (serving ``sock``, bound here, when given: see processes.handed_over)."""
    full_env = {**os.environ, **FAST_LEASES, **env, "OUTLAST_DATABASE_URL": db_url}
    if sock is not None:
        full_env = processes.handed_over(sock, full_env)
    # the child writes to its own copy of the log's descriptor; this one closes here
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "outlast.cli",
                *command,
                # the test graphs, unless the command names a langgraph.json of its own
                *(() if "--config" in command else ("--config", str(GRAPHS))),
                "--log-level",
                "info",
            ],
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).parent.parent,
            pass_fds=() if sock is None else (sock.fileno(),),
        )
    proc.log_path = log  # read back when the process misbehaves
    return proc


def start_worker(db_url: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    proc: subprocess.Popen[bytes] = _spawn(["worker"], db_url, log, env)
    return proc


def kill(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
    if sig in (signal.SIGKILL, signal.SIGTERM):
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            log = getattr(proc, "log_path", None)
            tail = log.read_text(errors="replace")[-4000:] if log else ""
            raise AssertionError(f"process did not exit after {sig!r}; its log:\n{tail}") from None


async def wait_for_file(path: Path, timeout: float = PATIENCE) -> None:
    await eventually(path.exists, timeout=timeout, what=f"{path} appearing")


async def wait_for_status(
    store: Store, run_id: str, statuses: set[str], timeout: float = PATIENCE, proc: Any = None
) -> Run:
    """The run, once its status is one of ``statuses``; fails at once if ``proc`` (the
    process that should get it there) has exited."""

    async def probe() -> Run:
        run = await store.get_run(run_id)
        if run is not None and run.status.value in statuses:
            return run
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"worker exited with {proc.returncode}")
        raise NotYet(run)

    return await eventually(probe, timeout=timeout, what=f"run {run_id} in {statuses}")


async def all_events(store: Store, run_id: str) -> list[Event]:
    return await store.read_events(run_id, 0, 100_000)


def assert_exact_log(events: list[Event]) -> None:
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), f"holes or repeats in {seqs}"
    assert sum(e.terminal for e in events) == 1 and events[-1].terminal


def start_server(
    db_url: str, log: Path, *flags: str, port: int = 0, **env: str
) -> tuple[subprocess.Popen[bytes], str]:
    """`outlast serve` on a free port (or ``port``: a restart where clients reconnect);
    returns once /readyz answers."""
    with processes.listen("127.0.0.1", port) as sock:
        port = sock.getsockname()[1]
        proc = _spawn(["serve", "--port", str(port), *flags], db_url, log, env, sock)
    url = f"http://127.0.0.1:{port}"
    wait_ready(proc, url, log)
    return proc, url


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Until the server at ``url`` answers /readyz 200; killed (and its log shown) if it
    exits or never gets there."""
    import urllib.request

    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=5) as response:
                return bool(response.status == 200)
        except OSError as exc:
            raise NotYet(exc) from None

    try:
        eventually_blocking(ready, every=0.05, what=f"server on {url} ready")
    except AssertionError:
        kill(proc)
        raise AssertionError(
            f"server did not become ready: {log.read_text(errors='replace')}"
        ) from None


@contextlib.asynccontextmanager
async def after_fault(db_url: str, folder: Path, point: str) -> AsyncIterator[Any]:
    """A worker killed at fault point ``point`` (it SIGKILLs itself there), then a second
    worker that finishes the job; yields the second, stopped with SIGTERM on exit."""
    first = start_worker(db_url, folder / "w1.log", OUTLAST_FAULTS=point)
    assert first.wait(timeout=30) == -signal.SIGKILL
    second = start_worker(db_url, folder / "w2.log")
    try:
        yield second
    finally:
        kill(second, signal.SIGTERM)
