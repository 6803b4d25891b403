"""The demo's servers: real ``outlast serve`` processes on one embedded store.

The demo kills one of them with SIGKILL mid-run (it is armed to die at a named fault
point) and starts another on the same folder, exactly as an operator would after a
machine died: the run's only state is what was on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from outlast import processes

# Short worker leases, so the second server takes over the dead one's run within
# seconds (the defaults are 30 s, sized for real deployments).
FAST_RECOVERY = {
    "OUTLAST_WORKER_LEASE_TTL": "2",
    "OUTLAST_WORKER_HEARTBEAT": "0.5",
    "OUTLAST_REAPER_INTERVAL": "0.5",
    "OUTLAST_WAKER_INTERVAL": "0.5",
}


# What `outlast serve` serves from the repository's langgraph.json (the reference agent
# first: the default), named by module rather than by file, so the demo's server serves
# the same wherever the demo is started from.
GRAPHS = {
    "agent": "outlast.graph.agent:graph",
    "steps": "outlast.graph.example:graph",
    "booking": "outlast.graph.booking:graph",
    "supervisor": "outlast.supervisor.ladder:supervisor",
}


def write_graphs(folder: Path) -> Path:
    path = folder / "langgraph.json"
    path.write_text(json.dumps({"graphs": GRAPHS}))
    return path


class ServerProcess:
    """``outlast serve`` on ``port``, bound here and handed to the process (so what answers
    on the port is this process); ``or_any``: on a free port when ``port`` is taken."""

    def __init__(
        self, name: str, folder: Path, port: int, faults: str = "", *, or_any: bool = False
    ) -> None:
        self.name = name
        sock = processes.listen("127.0.0.1", port, or_any=or_any)
        self.port: int = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / f"{name}.log"
        env = {
            **os.environ,
            **FAST_RECOVERY,
            "OUTLAST_DATA_DIR": str(folder),
            "OUTLAST_WORKSPACE_ROOT": str(folder),
            "OUTLAST_FAULTS": faults,
        }
        env.pop("OUTLAST_DATABASE_URL", None)  # the embedded default, always
        with sock:
            self.proc = self._start(folder, processes.handed_over(sock, env), sock.fileno())

    def _start(self, folder: Path, env: dict[str, str], fd: int) -> subprocess.Popen[bytes]:
        # the child writes to its own copy of the log's descriptor; this one closes here
        with self.log.open("ab") as out:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "outlast.cli",
                    "serve",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(folder),
                    "--config",
                    str(write_graphs(folder)),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(fd,),
            )

    def ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited; see {self.log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not become ready; see {self.log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
