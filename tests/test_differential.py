"""The differential harness (issue 43): the scenarios of ``tests/differential/`` run
through ``langgraph_sdk`` against ``langgraph dev`` (``langgraph-cli[inmem]``, the
reference) and against ``outlast serve`` on SQLite and on Postgres, and what a client
saw is compared step by step. A difference fails the test unless it is declared, with
its reason, in ``tests/differential/differences.py``; a declared one that no longer
occurs fails it too.

Each server starts once. The reference runs every scenario once per test session: the
first test to need it starts ``langgraph dev``, runs them, stops it and leaves what it
saw in a file the other test (another xdist worker, say) reads. Each test starts its
outlast server and runs the scenarios concurrently against it meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.differential.compare import judge
from tests.differential.differences import ADDITIVE, NORMALISED, UNCOMPARED
from tests.differential.runner import Observed, run_scenarios
from tests.differential.scenarios import SCENARIOS
from tests.differential.servers import start_outlast, start_reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """A folder every xdist worker of this session sees, named for the session."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if worker_id != "master" else base
    folder = root / f"differential-{os.environ.get('PYTEST_XDIST_TESTRUNUID', 'solo')}"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.asynccontextmanager
async def _locked(path: Path) -> AsyncIterator[None]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(0.1)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


async def _reference(shared: Path) -> dict[str, Observed]:
    """What ``langgraph dev`` showed, run once for the session."""
    cache = shared / "reference.json"
    async with _locked(shared / "reference.lock"):
        if not cache.exists():
            began = time.monotonic()
            server = await start_reference(shared / "reference")
            try:
                seen = await run_scenarios(
                    server.url, SCENARIOS, frozenset(UNCOMPARED) | frozenset(NORMALISED)
                )
            finally:
                await asyncio.to_thread(server.stop)
            data = {name: o.to_json() for name, o in seen.items()}
            data["<seconds>"] = {"steps": [], "ignored": [], "seconds": time.monotonic() - began}
            cache.write_text(json.dumps(data), encoding="utf-8")
        raw = json.loads(cache.read_text(encoding="utf-8"))
    raw.pop("<seconds>", None)
    return {name: Observed.from_json(o) for name, o in raw.items()}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_outlast_shows_clients_what_langgraph_dev_shows(
    backend: str, shared: Path, tmp_path: Path
) -> None:
    began = time.monotonic()
    server = await start_outlast(backend, tmp_path / "outlast")
    try:
        ignore = frozenset(UNCOMPARED) | frozenset(NORMALISED) | frozenset(ADDITIVE)
        ours, theirs = await asyncio.gather(
            run_scenarios(server.url, SCENARIOS, ignore), _reference(shared)
        )
    finally:
        await asyncio.to_thread(server.stop)
    verdict = judge(backend, theirs, ours)
    print(
        "| backend | scenarios | steps | same | declared | undeclared |\n"
        f"|---|---|---|---|---|---|\n{verdict.table()}\n"
        f"wall time {time.monotonic() - began:.1f} s"
    )
    assert not verdict.failures, (
        f"{len(verdict.failures)} differences from langgraph dev not in "
        "tests/differential/differences.py (or declared there and gone):\n\n"
        + "\n\n".join(verdict.failures)
    )
