"""SQLite on a full disk (issue 32): a real ``outlast serve`` with its data folder on a
small tmpfs, filled by a real file until SQLite's writes fail, then freed.

While the disk is full, every write is refused with a clear ``503`` (problem+json on
``/v1``, ``{"detail"}`` to LangGraph's SDK), reads still answer, and the runs whose writes
failed are not failed: they stop writing. Once the file is removed, everything resumes by
itself: each run started before the fill completes exactly once from its last
checkpoint, with its log as it was before plus what came after, and new runs work.

The tests mount a tmpfs (they run as root, as CI does): a failing mount is an error.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import InternalServerError

from outlast.errors import StoreFull
from outlast.runtime.activity import ActivityTracker
from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease
from outlast.store.sqlite import SqliteStore
from tests.disks import fill, small_disk
from tests.harness import eventually, is_problem, open_sqlite, scrape, total, wait_result
from tests.procs import kill, start_server
from tests.util import new_run

pytestmark = pytest.mark.slow

FINISHED = "outlast_worker_runs_finished_total"
LOG = "SELECT seq, type, data FROM outlast_events WHERE run_id = ? ORDER BY seq"


@pytest.fixture
async def full(tmp_path: Path) -> AsyncIterator[tuple[SqliteStore, Lease, Path]]:
    """A SQLite store on a small disk with a run claimed; the disk is then filled (the
    filler's path is given, to free it)."""
    with small_disk(tmp_path / "disk", 16) as disk:
        store = await open_sqlite(disk)
        try:
            run, _ = await store.create_run(new_run())
            [claimed] = await store.claim("w", 60, 1)
            yield store, Lease(run.id, "w", claimed.lease_epoch), fill(disk)
        finally:
            await store.close()


async def test_the_sqlite_store_refuses_writes_with_store_full_and_takes_them_once_freed(
    full: tuple[SqliteStore, Lease, Path],
) -> None:
    store, lease, filler = full
    checkpoint = ({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint())
    with pytest.raises(StoreFull, match="disk is full") as refused:
        await store.create_run(new_run())
    assert str(store.path) in str(refused.value)
    with pytest.raises(StoreFull):
        await store.append(lease, [EventDraft("custom", {"n": 1})])
    with pytest.raises(StoreFull, match="checkpoints"):  # the checkpointer's own file
        await store.checkpointer(lease).aput(*checkpoint, {}, {})
    with pytest.raises(StoreFull, match="checkpoints"):  # LangGraph's item store, there too
        await store.items.aput(("notes",), "k", {"v": 1})
    run = await store.get_run(lease.run_id)  # reads answer
    assert run is not None and run.last_seq == 2

    filler.unlink()
    # nothing to reset: the same calls succeed
    assert await store.append(lease, [EventDraft("custom", {"n": 1})]) == 3
    await store.checkpointer(lease).aput(*checkpoint, {}, {})
    assert (await store.create_run(new_run()))[1]
    await store.items.aput(("notes",), "k", {"v": 1})


async def test_an_activity_not_written_on_a_full_disk_is_written_once_freed(
    full: tuple[SqliteStore, Lease, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The activity is advisory: its write failing on a full disk neither ends its
    tracker (before, the exception ended the tracker's task, and closing it raised it:
    the run's execution "crashed") nor is lost once the disk has room again."""
    store, lease, filler = full
    attempts: list[BaseException | None] = []
    real = store.set_activity

    async def spied(*args: Any, **kwargs: Any) -> None:
        try:
            await real(*args, **kwargs)
        except BaseException as exc:
            attempts.append(exc)
            raise
        attempts.append(None)

    monkeypatch.setattr(store, "set_activity", spied)
    sink = EventSink(store, lease, lambda exc: None)
    tracker = ActivityTracker(store, lease, sink, ttl=60, flush_interval=0.02)
    try:
        tracker.start("k", "node")
        await eventually(lambda: attempts, what="an activity write")
        assert isinstance(attempts[0], StoreFull)
        filler.unlink()
        await eventually(lambda: None in attempts, what="the activity written once freed")
    finally:
        await tracker.close()  # raised the store's error before
        await sink.close()
    run = await store.get_run(lease.run_id)
    assert run is not None and run.activity is not None and run.activity["name"] == "node"


def run_log(disk: Path, run_id: str) -> list[tuple[int, str, str]]:
    """A run's events as the database holds them, read beside the server."""
    conn = sqlite3.connect(disk / "outlast.db")
    try:
        return [tuple(row) for row in conn.execute(LOG, (run_id,))]
    finally:
        conn.close()


def gated(folder: Path, name: str) -> dict[str, Any]:
    """``counted``, held inside n3 until the gate opens (n1 and n2 are checkpointed)."""
    count = folder / f"{name}.count"
    conf = {"count_file": str(count), "gate_at": "n3", "gate": str(folder / "gate")}
    return {"configurable": conf}


async def test_a_full_disk_refuses_writes_with_503_and_everything_resumes_once_freed(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", 16) as disk:
        # One attempt each: a store failure must cost none (runtime/giveback.py); counted,
        # the reaper would fail each run "worker_lost" at its lease's end.
        server, url = start_server(
            f"sqlite:///{disk / 'outlast.db'}",
            tmp_path / "server.log",
            OUTLAST_DATA_DIR=str(disk),
            OUTLAST_MAX_ATTEMPTS="1",
        )
        sdk = get_client(url=url)
        try:
            await _scenario(server, url, sdk, disk, tmp_path)
        finally:
            await sdk.aclose()
            kill(server, signal.SIGTERM)


async def _scenario(server: Any, url: str, sdk: LangGraphClient, disk: Path, folder: Path) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        # Runs on both faces, each inside n3 (its first two steps committed).
        runs: dict[str, Path] = {}
        for name in ("a", "b", "c"):
            body = {"graph": "counted", "config": gated(folder, name)}
            response = await client.post("/v1/runs", json=body)
            assert response.status_code == 202, response.text
            runs[response.json()["id"]] = folder / f"{name}.count"
        thread = await sdk.threads.create()
        lg_run = await sdk.runs.create(
            thread["thread_id"], "counted", input={}, config=gated(folder, "lg")
        )
        runs[lg_run["run_id"]] = folder / "lg.count"
        await eventually(
            lambda: all(c.exists() and "n3" in c.read_text().split() for c in runs.values()),
            what="every run inside n3",
        )
        before = {run_id: run_log(disk, run_id) for run_id in runs}

        filler = fill(disk)

        # Every write is refused, clearly. A write may still fit in space SQLite had
        # already taken (its WAL), so the first refusal is awaited; what was accepted
        # meanwhile is a run like the others and must complete too.
        async def refused() -> httpx.Response | None:
            response = await client.post("/v1/runs", json={"graph": "steps", "input": {}})
            if response.status_code == 202:
                runs[response.json()["id"]] = Path()
                return None
            return response

        response = await eventually(refused, what="a write refused")
        problem = is_problem(response, 503)
        assert problem["title"] == "Store full" and problem["retryable"] is True
        assert "disk is full" in problem["detail"], problem
        assert int(response.headers["Retry-After"]) >= 1
        with pytest.raises(InternalServerError) as lg_refusal:  # LangGraph's SDK: >= 500
            await sdk.threads.create()
        assert lg_refusal.value.response.status_code == 503
        assert "disk is full" in lg_refusal.value.body["detail"]  # type: ignore[index]
        with pytest.raises(InternalServerError) as lg_refusal:
            await sdk.runs.create(None, "steps", input={})
        assert lg_refusal.value.response.status_code == 503
        # Reads still answer, and the server keeps serving on the same connection.
        for run_id in runs:
            assert (await client.get(f"/v1/runs/{run_id}")).status_code == 200

        # The held nodes finish: their checkpoint writes fail on the full disk, and the
        # runs stop writing (not failed, not crashed) until the store takes writes again.
        (folder / "gate").write_text("open")

        async def stopped() -> bool:
            samples = await scrape(client)
            ended = total(samples, FINISHED, outcome="store_failed")
            crashed = total(samples, FINISHED, outcome="crashed")
            assert crashed == 0 and total(samples, FINISHED, outcome="failed") == 0
            return ended >= len(before)

        await eventually(stopped, what="the runs stopped by the full disk")
        assert server.poll() is None

        filler.unlink()

        # Everything resumes by itself.
        for run_id in runs:
            final = await wait_result(client, run_id)
            assert final["status"] == "completed", final
        fresh = await client.post("/v1/runs", json={"graph": "steps", "input": {}})
        assert fresh.status_code == 202, fresh.text
        assert (await wait_result(client, fresh.json()["id"]))["status"] == "completed"
        waited = await sdk.runs.wait(None, "steps", input={})
        assert isinstance(waited, dict) and waited["steps"][-1] == "finish"
        assert (await sdk.runs.get(thread["thread_id"], lg_run["run_id"]))["status"] == "success"
        samples = await scrape(client)
        assert total(samples, FINISHED, outcome="crashed") == 0
        assert total(samples, FINISHED, outcome="failed") == 0

    for run_id, kept in before.items():
        log = run_log(disk, run_id)
        assert log[: len(kept)] == kept  # nothing written before was lost or changed
        assert [row[0] for row in log] == list(range(1, len(log) + 1))  # no hole, no repeat
        types = [row[1] for row in log]
        ends = [t for t in types if t in ("run.completed", "run.failed", "run.cancelled")]
        assert ends == ["run.completed"] == types[-1:], types  # finished once, at the end
        # given back by its worker once the disk had room, not reaped as a dead worker's
        assert "run.requeued" not in types, types
        released = [row[2] for row in log if row[1] == "run.released"]
        assert len(released) == 1 and "store_failed" in released[0], log
        # resumed from its last checkpoint: n1 and n2 did not run again, n3 did
        executed = runs[run_id].read_text().split()
        assert executed == ["n1", "n2", "n3", "n3", "n4", "n5", "n6"], executed
