"""A process killed while a shared batch of checkpoint writes is sent but not committed
(fault point ``checkpoint.batch_before_commit``): no run of the batch saw its write
acknowledged, and every run completes from its last committed checkpoint.

The batch stalls at the point (``:stall``) rather than killing the process there, so the
rest of the process keeps running while the write hangs: a write acknowledged before its
commit would let its run start the next node, which the count files would show beside a
checkpoint the database never got. The test kills the process once its heartbeat has
renewed the runs' leases after the stall (the event loop has turned many times since).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from outlast import faults
from outlast.runtime.accept import RunRequest
from outlast.store import RunStatus, Store
from outlast.store.postgres import PostgresStore
from tests.harness import NotYet, eventually
from tests.procs import all_events, assert_exact_log, kill, start_worker, wait_for_status
from tests.util import accept

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

NODES = [f"n{i}" for i in range(1, 7)]
RUNS = 8


async def _accept(store: Store, count_file: Path) -> tuple[str, str]:
    run, _ = await accept(
        store,
        RunRequest(
            graph="counted", input={}, config={"configurable": {"count_file": str(count_file)}}
        ),
        graphs=["counted"],
        max_attempts=3,
    )
    assert run.thread_id is not None
    return run.id, run.thread_id


async def _lease_expiries(pg: PostgresStore, ids: list[str]) -> dict[str, object]:
    async with pg.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id::text AS id, lease_expires_at FROM outlast_runs WHERE id = ANY(%s::uuid[])",
            (ids,),
        )
        return {row["id"]: row["lease_expires_at"] for row in await cur.fetchall()}


async def _renewed_after_stall(pg: PostgresStore, ids: list[str], log: Path) -> None:
    """Until the worker stalled in a batch, and then renewed its leases once more."""
    await eventually(
        lambda: faults.STALLED in log.read_text(errors="replace"),
        what="a batch of several runs stalled before its commit",
    )
    first = await _lease_expiries(pg, ids)

    async def renewed() -> bool:
        now = await _lease_expiries(pg, ids)
        moved = [
            i for i in ids if now[i] is not None and first[i] is not None and now[i] > first[i]
        ]
        if not moved:
            raise NotYet(now)
        return True

    await eventually(renewed, what="a heartbeat after the stall")


async def test_a_batch_killed_before_its_commit_acknowledged_nothing(
    pg: PostgresStore, pg_url: str, tmp_path: Path
) -> None:
    runs = [await _accept(pg, tmp_path / f"r{i}.log") for i in range(RUNS)]
    ids = [run_id for run_id, _ in runs]
    log = tmp_path / "w1.log"
    first = start_worker(
        pg_url,
        log,
        # the 8th shared batch: the runs are past their first steps by then
        OUTLAST_FAULTS=f"{faults.BATCH_BEFORE_COMMIT}:stall@8",
        OUTLAST_WORKER_CONCURRENCY=str(RUNS),
    )
    try:
        await _renewed_after_stall(pg, ids, log)
    finally:
        kill(first)
    saver = pg.checkpointer()
    for i, (_, thread_id) in enumerate(runs):
        started = _started(tmp_path / f"r{i}.log")
        latest = await saver.aget_tuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
        committed = list(latest.checkpoint["channel_values"].get("done", [])) if latest else []
        step = int(latest.metadata["step"]) if latest else -1  # none: not even the input
        # node n<j> runs in step j, which starts once the checkpoint of step j - 1 is
        # acknowledged: no node past the step after the last committed one has started
        assert started[: len(committed)] == committed, (started, committed)
        assert len(started) <= max(step + 1, 0), (
            f"run {i} started {started} with step {step} committed: a write was "
            "acknowledged before its commit"
        )
    second = start_worker(pg_url, tmp_path / "w2.log", OUTLAST_WORKER_CONCURRENCY=str(RUNS))
    try:
        for run_id in ids:
            final = await wait_for_status(pg, run_id, {"completed", "failed"}, proc=second)
            assert final.status == RunStatus.COMPLETED, (tmp_path / "w2.log").read_text()
            assert final.result == {"done": NODES}
            assert_exact_log(await all_events(pg, run_id))
    finally:
        kill(second, signal.SIGTERM)


def _started(count_file: Path) -> list[str]:
    text = count_file.read_text() if count_file.exists() else ""
    return re.findall(r"n\d", text)
