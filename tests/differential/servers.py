"""The servers a differential test compares: ``langgraph dev`` (``langgraph-cli[inmem]``,
the reference, run as it is, never copied) and ``outlast serve`` on SQLite and on
Postgres, each a real process on the same app (``app/langgraph.json``).

``langgraph dev`` keeps its state in ``.langgraph_api/`` of its working directory and
resolves the config's relative paths against that directory, so it runs in a temporary
folder on a copy of the config whose paths are absolute. ``outlast serve`` reads the
config where it is.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.harness import ADMIN_URL, create_database
from tests.procs import kill, start_server

APP = Path(__file__).parent / "app"
CONFIG = APP / "langgraph.json"
READY_TIMEOUT = 90.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Server:
    name: str  # "reference", "sqlite" or "postgres"
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    database: str | None = None  # a Postgres database made for it, dropped with it

    def output(self) -> str:
        return _ANSI.sub("", self.log.read_text(encoding="utf-8", errors="replace"))

    def stop(self) -> None:
        if self.name == "reference":
            _stop_group(self.proc)
        else:
            kill(self.proc, signal.SIGTERM)
        if self.database:
            _drop(self.database)


def _drop(database: str) -> None:
    name = database.rsplit("/", 1)[-1]
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _absolute_config() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CONFIG.read_text(encoding="utf-8"))

    def absolute(spec: str) -> str:
        path, _, attr = spec.rpartition(":")
        return f"{(APP / path).resolve()}:{attr}"

    data["graphs"] = {k: absolute(v) for k, v in data["graphs"].items()}
    data["dependencies"] = [str((APP / d).resolve()) for d in data.get("dependencies", [])]
    data["auth"]["path"] = absolute(data["auth"]["path"])
    data["http"]["app"] = absolute(data["http"]["app"])
    return data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            continue


async def start_reference(folder: Path) -> Server:
    """``langgraph dev`` on the app, in ``folder``, on a free port; once ``/ok`` answers."""
    langgraph = Path(sys.executable).parent / "langgraph"
    assert langgraph.exists(), f"{langgraph} missing: install the dev extra"
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "langgraph.json"
    config.write_text(json.dumps(_absolute_config(), indent=1), encoding="utf-8")
    port = _free_port()
    log = folder / "langgraph-dev.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OUTLAST_")},
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "PYTHONIOENCODING": "utf-8",
    }
    command = [
        str(langgraph),
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n-jobs-per-worker",
        "50",
        "--config",
        str(config),
    ]
    proc = _spawn(command, folder, env, log)
    server = Server("reference", f"http://127.0.0.1:{port}", proc, log)
    try:
        await _until_ok(server)
    except BaseException:
        server.stop()
        raise
    return server


def _spawn(command: list[str], folder: Path, env: dict[str, str], log: Path) -> Any:
    """The process in a session of its own (stopped with its children as a group)."""
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


async def _until_ok(server: Server) -> None:
    deadline = asyncio.get_running_loop().time() + READY_TIMEOUT
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            if server.proc.poll() is not None:
                raise AssertionError(f"langgraph dev exited:\n{server.output()[-5000:]}")
            try:
                response = await client.get(f"{server.url}/ok")
                if response.status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"langgraph dev not ready:\n{server.output()[-5000:]}")
            await asyncio.sleep(0.1)


async def start_outlast(backend: str, folder: Path) -> Server:
    """``outlast serve`` on the app, on SQLite in ``folder`` or on a Postgres database
    of its own (never the session's, which other tests empty)."""
    folder.mkdir(parents=True, exist_ok=True)
    database = create_database("outlast_diff") if backend == "postgres" else None
    db_url = database or f"sqlite:///{folder / 'outlast.db'}"
    log = folder / f"outlast-{backend}.log"
    try:
        proc, url = await asyncio.to_thread(
            start_server, db_url, log, "--config", str(CONFIG), OUTLAST_DATA_DIR=str(folder)
        )
    except BaseException:
        if database:
            _drop(database)
        raise
    return Server(backend, url, proc, log, database)
