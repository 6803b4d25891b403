"""Compensation across crashes: a real worker SIGKILLs itself at each step of undoing a
booking (before the call, after it, after it is recorded); the worker that takes the run
over finishes the compensations without running the graph again. Each booking is undone
once: called once, or (killed between the call and its record) called again with the
same key, which the desk deduplicates by."""

from __future__ import annotations

import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from outlast.runtime.accept import RunRequest
from outlast.runtime.compensation import AFTER_CALL, AFTER_DONE, BEFORE_CALL
from outlast.store import Store
from tests.compensation_graphs import desk_lines
from tests.harness import eventually
from tests.procs import after_fault, kill, start_worker, wait_for_status
from tests.util import accept


async def _trip(store: Store, desk: Path, then: str) -> str:
    conf = {"desk": str(desk), "then": then}
    run, _ = await accept(
        store,
        RunRequest(graph="trip", input={}, config={"configurable": conf}),
        graphs=["trip"],
        max_attempts=1,  # a run with its ending decided goes on whatever its attempts
    )
    return run.id


def _undone(desk: Path) -> dict[str, list[str]]:
    """Each booking's unbook calls, by the key they came with."""
    calls: dict[str, list[str]] = defaultdict(list)
    for line in desk_lines(desk):
        if line["op"] == "unbook":
            calls[line["booking"]].append(line["key"])
    return calls


async def _check(store: Store, run_id: str, desk: Path, calls_of_first: int, late: int = 0) -> Any:
    run = await store.get_run(run_id)
    assert run is not None
    ops = [line["op"] for line in desk_lines(desk)]
    assert ops.count("book") == 2 and ops.count("email") == 1  # the graph did not run again
    undone = _undone(desk)
    assert len(undone) == 2
    for keys in undone.values():
        assert len(set(keys)) == 1  # one key per booking: undone once
    hotel = next(b for b in undone if b.startswith("hotel"))
    assert len(undone[hotel]) == calls_of_first  # the one the worker died undoing
    effects = await store.list_effects(run_id)
    undos = [e for e in effects if e.compensates]
    assert [e.status for e in undos] == ["done", "done"]
    events = await store.read_events(run_id, 0, 10_000)
    compensated = [e for e in events if e.type == "effect.compensated"]
    assert len(compensated) == 2  # one each, though a crash took one with it
    assert sum(bool(e.data.get("late")) for e in compensated) == late
    assert {e.data["compensates"] for e in compensated} == {e.compensates for e in undos}
    assert run.error is not None and len(run.error["compensated"]) == 2
    return run


@pytest.mark.parametrize(
    ("point", "calls", "late"), [(BEFORE_CALL, 1, 0), (AFTER_CALL, 2, 0), (AFTER_DONE, 1, 1)]
)
async def test_killed_while_compensating_a_failed_run(
    store: Store, db_url: str, tmp_path: Path, point: str, calls: int, late: int
) -> None:
    desk = tmp_path / "desk.jsonl"
    run_id = await _trip(store, desk, "fail")
    async with after_fault(db_url, tmp_path, point) as second:
        final = await wait_for_status(
            store, run_id, {"completed", "failed", "cancelled"}, proc=second
        )
    assert final.status.value == "failed" and final.attempts == 2
    run = await _check(store, run_id, desk, calls, late)
    assert run.error["type"] == "RuntimeError"


async def test_killed_while_compensating_a_cancelled_waiting_run(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    desk = tmp_path / "desk.jsonl"
    run_id = await _trip(store, desk, "wait")
    first = start_worker(db_url, tmp_path / "w0.log")
    try:
        await wait_for_status(store, run_id, {"waiting"}, proc=first)
    finally:
        kill(first, signal.SIGTERM)
    cancelled = await store.request_cancel(run_id, "no trip")
    assert cancelled is not None and cancelled.status.value == "cancelling"
    async with after_fault(db_url, tmp_path, AFTER_CALL) as second:
        final = await wait_for_status(
            store, run_id, {"completed", "failed", "cancelled"}, proc=second
        )
    assert final.status.value == "cancelled"
    run = await _check(store, run_id, desk, 2)
    assert run.error["reason"] == "no trip"


async def test_a_worker_lost_before_it_heard_of_a_cancel(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """Killed in flight, then cancelled: the reaper records the ending the worker never
    could, and the next worker compensates."""
    desk = tmp_path / "desk.jsonl"
    run_id = await _trip(store, desk, "sleep")
    first = start_worker(db_url, tmp_path / "w0.log")

    async def both_done() -> bool:  # in the ledger: a booking in flight is another story
        effects = await store.list_effects(run_id)
        return [e.status for e in effects if e.compensate] == ["done", "done"]

    try:
        await eventually(both_done, what="both bookings recorded")
    finally:
        kill(first, signal.SIGKILL)
    cancelling = await store.request_cancel(run_id, "no trip")
    assert cancelling is not None and cancelling.status.value == "cancelling"
    second = start_worker(db_url, tmp_path / "w1.log")
    try:
        final = await wait_for_status(
            store, run_id, {"completed", "failed", "cancelled"}, proc=second
        )
    finally:
        kill(second, signal.SIGTERM)
    assert final.status.value == "cancelled"
    run = await _check(store, run_id, desk, 1)
    assert run.error["reason"] == "no trip"
