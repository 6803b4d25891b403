"""Aegra (github.com/aegra/aegra, the self-hosted LangGraph Agent Server) as a peer of the
comparison: installed in a venv of its own, run on a fresh database, killed like a machine.

Why each choice:

- Only ``aegra-api`` is installed. ``aegra serve`` (from ``aegra-cli``) only sets
  ``AEGRA_CONFIG``, loads a ``.env`` and runs ``python -m uvicorn aegra_api.main:app`` in a
  child it does not forward SIGTERM to; running that uvicorn directly is the same server,
  one process, and ``stop()`` reaches it. ``langgraph`` is pinned to the bench's own version
  so both servers run the same LangGraph. Aegra needs Python >= 3.12.
- ``AEGRA_CONFIG`` names bench/peers/langgraph.json itself (Aegra reads the langgraph.json
  format and resolves graph paths against the file's folder). The working directory is an
  empty temporary folder: Aegra would otherwise pick up an aegra.json there, and ``-m``
  puts it on sys.path. The environment is a short whitelist plus Aegra's settings, so no
  ``DATABASE_URL``/``REDIS_*``/``POSTGRES_*`` of the caller leaks in.
- Redis mode (``REDIS_BROKER_ENABLED``): Aegra's production mode, the only one with crash
  recovery. The API enqueues run ids on a Redis list; worker coroutines *in the same
  process* BLPOP them and run each under a Postgres lease (30 s, heartbeat 10 s); a reaper
  (every 15 s) puts runs with an expired lease back on the queue, up to 3 retries. The retry
  keeps the run id, so LangGraph resumes it from its last checkpoint: the node that was
  running when the process died runs again (its side effect twice), finished ones do not.
  After a SIGKILL that takes 30 to 50 s. Without Redis (``redis_url=None``) runs are plain
  asyncio tasks: a killed run stays ``running`` forever, but ``runs.wait``/``join`` return
  at once, where in Redis mode they poll a Redis "done" key every 2 s (so ~2 s each).
  The queue and channel keys carry the database's name, so two Aegras on one Redis
  database never share a queue, and a restarted one finds its own; Aegra's other keys
  expire by themselves (replay buffers 10 min after their last event, "done" keys 1 h).
- Concurrency: Aegra runs at most ``WORKER_COUNT * N_JOBS_PER_WORKER`` runs at once per
  process (defaults 3 * 10). Here ``WORKER_COUNT=1`` and ``N_JOBS_PER_WORKER=jobs``: an
  exact cap; one BLPOP loop hands out jobs far faster than they run. Pools stay at Aegra's
  defaults (SQLAlchemy 10 + 20 overflow, LangGraph 5..20: up to 50 Postgres connections;
  when Postgres refuses one, the request answers 500) unless ``env`` says otherwise.
- Quiet and private: ``LOG_LEVEL=WARNING`` with JSON logs, no access log, no LangSmith
  tracing, no cron scheduler (nothing here uses it). Aegra has no telemetry of its own;
  with no auth file it uses the noop auth (one shared anonymous user).
- Migrations run at startup and are skipped when the database is at head, so a restart
  on the same database is an ordinary start.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from benchkit import Process, free_port, kill_tree, process_tree

AEGRA_VERSION = "0.11.0"
_KEEP_ENV = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR")


class PeerUnavailable(Exception):
    """A peer that cannot be installed or started; ``str()`` is a one-line reason."""


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def find_python312() -> str:
    """``BENCH_PYTHON312``, else ``python3.13``/``python3.12`` on PATH (pyenv shims that are
    not active fail the probe), else pyenv's 3.12+; the probe returns the real executable."""
    candidates = [os.environ.get("BENCH_PYTHON312", ""), "python3.13", "python3.12"]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")))
    probe = "import sys; print(sys.executable if sys.version_info >= (3, 12) else '')"
    for candidate in filter(None, candidates):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            out = _run([candidate, "-c", probe], 30).stdout.strip()
            if out:
                return out
    raise PeerUnavailable("Aegra needs Python >= 3.12: none found (set BENCH_PYTHON312)")


def ensure_aegra(root: Path) -> Path:
    """The python of a venv at ``root/aegra-venv`` holding the pinned Aegra, made once."""
    venv = root / "aegra-venv"
    python = venv / "bin" / "python"
    pins = {"aegra-api": AEGRA_VERSION, "langgraph": version("langgraph")}
    check = f"from importlib.metadata import version as v; print([v(p) for p in {list(pins)}])"
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        if _run([str(python), "-c", check], 60).stdout.strip() == str(list(pins.values())):
            return python
    base = find_python312()
    root.mkdir(parents=True, exist_ok=True)
    steps = [
        [base, "-m", "venv", "--clear", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        + [f"{name}=={pin}" for name, pin in pins.items()],
    ]
    for step in steps:
        try:
            done = _run(step, 1200)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PeerUnavailable(f"installing Aegra: {exc}") from None
        if done.returncode != 0:
            lines = (done.stdout + done.stderr).strip().splitlines()[-2:]
            raise PeerUnavailable("installing Aegra failed: " + " | ".join(x[:150] for x in lines))
    return python


class Aegra(Process):
    """One Aegra server process on ``db_url`` (migrated at start) serving ``graphs``."""

    name = "aegra"

    def __init__(
        self,
        python: Path,
        db_url: str,
        redis_url: str | None,
        graphs: Path,
        *,
        jobs: int = 50,
        env: dict[str, str] | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        netns: str | None = None,
    ) -> None:
        """``netns``: run it in that network namespace (``ip netns exec``), listening on
        ``host``, an address of the namespace the bench can reach (bench/nemesis_aegra.py)."""
        if not Path(python).exists():
            raise PeerUnavailable(f"no Aegra python at {python}")
        if not Path(graphs).is_file():  # Aegra would fall back to its working directory
            raise PeerUnavailable(f"no graphs file at {graphs}")
        self.folder = tempfile.mkdtemp(prefix="outlast-bench-aegra-")
        self.port = port or free_port()
        self.base = f"http://{host}:{self.port}"
        scope = urlsplit(db_url).path.strip("/") or "aegra"
        settings = {
            "AEGRA_CONFIG": str(Path(graphs).resolve()),
            "DATABASE_URL": db_url,
            "REDIS_BROKER_ENABLED": "true" if redis_url else "false",
            "REDIS_URL": redis_url or "redis://127.0.0.1:6379/0",
            "REDIS_CHANNEL_PREFIX": f"aegra:{scope}:run:",
            "WORKER_QUEUE_KEY": f"aegra:{scope}:jobs",
            "WORKER_COUNT": "1",
            "N_JOBS_PER_WORKER": str(jobs),
            "AUTH_TYPE": "noop",
            "LOG_LEVEL": "WARNING",
            "ENV_MODE": "PRODUCTION",
            "CRON_ENABLED": "false",
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
        }
        base_env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
        cmd = [str(python), "-m", "uvicorn", "aegra_api.main:app", "--host", host]
        cmd += ["--port", str(self.port), "--log-level", "warning", "--no-access-log"]
        if netns:  # ``ip netns exec`` execs: the process tree stays the server's own
            cmd = ["ip", "netns", "exec", netns, *cmd]
        super().__init__(cmd, base_env | settings | (env or {}), Path(self.folder))

    async def ready(self, limit: float = 120.0) -> None:
        """``/ready`` answers 200 once migrations ran and the database and checkpointer
        respond; a server that exits or never gets there is ``PeerUnavailable``."""
        deadline = time.monotonic() + limit
        async with httpx.AsyncClient(timeout=5.0) as client:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise PeerUnavailable(f"aegra exited ({self.proc.returncode}): {self.reason()}")
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(f"{self.base}/ready")).status_code == 200:
                        return
                await asyncio.sleep(0.2)
        raise PeerUnavailable(f"aegra not ready after {limit:.0f}s")

    def reason(self) -> str:
        """The last line of the last traceback Aegra logged (its JSON log holds one in a
        line), or its last line of output."""
        for line in reversed(self.output().splitlines()):
            with contextlib.suppress(ValueError, AttributeError):
                record = json.loads(line)
                text = str(record.get("exception") or record.get("event") or "")
                if "Traceback" in text:  # SQLAlchemy appends a "(Background on ...)" line
                    lines = [x for x in text.splitlines() if x.strip() and x[0] != "("]
                    return lines[-1][:200]
        return (self.tail(1) or "no output").strip()[:200]

    def pids(self) -> list[int]:
        """The server process and all its descendants now."""
        return process_tree(self.pid) if self.proc.poll() is None else []

    def kill_all(self) -> None:
        """SIGKILL the process group and every descendant at once, and wait for them."""
        kill_tree(self.proc)

    def stop(self, grace: float = 45.0) -> None:
        """SIGTERM: Aegra drains in-flight runs up to ``WORKER_DRAIN_TIMEOUT`` (30 s), then
        requeues what is left; past ``grace`` it is killed."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        if self.proc.poll() is None:
            print(f"aegra ignored SIGTERM for {grace:.0f}s; killing it", file=sys.stderr)
        self.kill_all()
        super().stop()
        shutil.rmtree(self.folder, ignore_errors=True)
