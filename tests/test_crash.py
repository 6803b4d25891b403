"""Crash recovery with real processes: SIGKILL inside a node, SIGSTOP past the lease.

Postgres is the backend these guarantees are made for (many processes, many machines);
SQLite runs the same scenarios with two processes on one file.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from outlast.runtime.accept import RunRequest
from outlast.store import RunStatus, Store
from tests.harness import NotYet, eventually, open_pg, wait_result
from tests.procs import (
    after_fault,
    all_events,
    assert_exact_log,
    kill,
    start_worker,
    wait_for_file,
    wait_for_status,
)
from tests.util import accept

pytestmark = pytest.mark.slow

GRAPHS = ["steps", "counted", "slow", "chatty", "boom"]


async def _accept(store: Store, count_file: Path, **conf: object) -> str:
    run, _ = await accept(
        store,
        RunRequest(
            graph="counted",
            input={},
            config={"configurable": {"count_file": str(count_file), **conf}},
        ),
        graphs=GRAPHS,
        max_attempts=3,
    )
    return run.id


async def test_sigkill_inside_a_node_resumes_from_the_last_checkpoint(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    count = tmp_path / "count.log"
    run_id = await _accept(store, count, block_at="n4")
    first = start_worker(db_url, tmp_path / "w1.log")
    second = None
    try:
        await wait_for_file(count.with_suffix(".entered"))  # inside n4, n1..n3 checkpointed
        kill(first)  # SIGKILL: no drain, no release, no finally
        crashed = await store.get_run(run_id)
        assert crashed is not None and crashed.status == RunStatus.RUNNING  # nobody knows yet
        second = start_worker(db_url, tmp_path / "w2.log")
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(first)
        if second is not None:
            kill(second, signal.SIGTERM)
    assert final.status == RunStatus.COMPLETED, (tmp_path / "w2.log").read_text()
    # n1..n3 were saved since the first claim: the lost worker cost the run no attempt
    assert final.attempts == 1
    assert final.result == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]}
    # finished nodes did not run again; the node in flight did
    assert count.read_text().split() == ["n1", "n2", "n3", "n4", "n4", "n5", "n6"]
    events = await all_events(store, run_id)
    assert_exact_log(events)
    types = [e.type for e in events]
    assert types.count("run.started") == 2
    requeued = next(e for e in events if e.type == "run.requeued")
    assert (requeued.data["takeover"], requeued.data["counted"]) == (
        "lease_expired_with_progress",
        False,
    )
    resumed = next(e for e in events if e.type == "run.resumed")
    assert resumed.data["next"] == ["n4"]
    updated = [e.data["node"] for e in events if e.type == "node.updated"]
    assert updated == ["n1", "n2", "n3", "n4", "n5", "n6"]


@pytest.mark.parametrize("backend", ["postgres"])
async def test_a_frozen_worker_is_fenced_after_takeover(
    store: Store, db_url: str, tmp_path: Path, backend: str
) -> None:
    """SIGSTOP a worker in the middle of a node for longer than its lease; another worker
    takes the run over and finishes it; the first one, resumed with SIGCONT, finishes its
    node and is refused every write: no event, no checkpoint, no status change.

    Postgres only: on SQLite a process frozen inside one of its (short) write
    transactions holds the file's only write lock, so nobody can take over until it
    thaws; that is why the embedded store is a one-process store (ARCHITECTURE.md)."""
    count = tmp_path / "count.log"
    run_id = await _accept(store, count, step_delay=1.0)
    first = start_worker(db_url, tmp_path / "w1.log")
    second = None
    try:
        await wait_for_file(count)  # n1 entered, sleeping 1 s inside it
        first.send_signal(signal.SIGSTOP)
        second = start_worker(db_url, tmp_path / "w2.log")
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
        events_before = await all_events(store, run_id)
        first.send_signal(signal.SIGCONT)
        # let the old worker wake, finish n1 and try to write; it must stop by itself
        await _wait_log(tmp_path / "w1.log", "lease lost")
    finally:
        kill(first)
        if second is not None:
            kill(second, signal.SIGTERM)
    assert final.status == RunStatus.COMPLETED
    events = await all_events(store, run_id)
    assert [e.seq for e in events] == [e.seq for e in events_before]
    assert_exact_log(events)
    again = await store.get_run(run_id)
    assert again is not None and again.status == RunStatus.COMPLETED
    assert again.result == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]}
    if backend == "postgres":
        # the thread's checkpoints were not forked by the zombie
        from outlast.graph.registry import GraphRegistry
        from outlast.runtime.outcomes import run_config
        from tests.harness import GRAPHS as GRAPHS_FILE

        graph = (
            GraphRegistry.from_config(GRAPHS_FILE)
            .static("counted")
            .copy(update={"checkpointer": store.checkpointer()})
        )
        state = await graph.aget_state(run_config(again))
        assert state.values == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]} and not state.next


async def _wait_log(log: Path, needle: str) -> None:
    def found() -> bool:
        text = log.read_text(errors="replace")
        if needle not in text:
            raise NotYet(text[-2000:])
        return True

    await eventually(found, every=0.05, what=f"{needle!r} in {log}")


async def test_sigterm_drains_at_a_step_boundary_and_leaves_the_run_claimable(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    count = tmp_path / "count.log"
    run_id = await _accept(store, count, step_delay=0.4)
    first = start_worker(db_url, tmp_path / "w1.log")
    second = None
    try:
        await _wait_log_lines(count, 2)  # inside n2
        kill(first, signal.SIGTERM)  # graceful: drain at the end of n2
        assert first.returncode == 0, (tmp_path / "w1.log").read_text()
        released = await store.get_run(run_id)
        assert released is not None and released.status == RunStatus.QUEUED
        assert released.attempts == 0  # a drain is not a failed attempt
        second = start_worker(db_url, tmp_path / "w2.log")
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    finally:
        kill(first)
        if second is not None:
            kill(second, signal.SIGTERM)
    assert final.status == RunStatus.COMPLETED and final.attempts == 1
    # the node in flight finished before the drain: nothing ran twice
    assert count.read_text().split() == ["n1", "n2", "n3", "n4", "n5", "n6"]
    events = await all_events(store, run_id)
    assert_exact_log(events)
    released_event = next(e for e in events if e.type == "run.released")
    assert released_event.data["reason"] == "shutdown"


async def test_new_runs_wake_an_idle_worker_in_another_process(pg_url: str, tmp_path: Path) -> None:
    """Postgres only (NOTIFY crosses processes; SQLite's wake-up is in-process). The
    worker's safety-net poll is set to 120 s: only a notification can wake it in time."""
    store = await open_pg(pg_url)
    worker = start_worker(pg_url, tmp_path / "w.log", OUTLAST_QUEUE_POLL="120")
    try:
        first = await _accept(store, tmp_path / "a.log")
        await wait_for_status(store, first, {"completed"}, timeout=30, proc=worker)
        second = await _accept(store, tmp_path / "b.log")  # the worker is idle, asleep
        done = await wait_for_status(store, second, {"completed"}, timeout=30, proc=worker)
    finally:
        kill(worker, signal.SIGTERM)
        await store.close()
    assert done.attempts == 1


async def _wait_log_lines(path: Path, lines: int) -> None:
    await eventually(
        lambda: path.exists() and len(path.read_text().split()) >= lines,
        what=f"{path} reaching {lines} lines",
    )


async def test_crash_right_after_claim_loses_nothing(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """Fault point worker.after_claim: the run is claimed, no checkpoint exists yet."""
    count = tmp_path / "count.log"
    run_id = await _accept(store, count)
    async with after_fault(db_url, tmp_path, "worker.after_claim") as second:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    # lost before it saved a step: the attempt counts
    assert final.status == RunStatus.COMPLETED and final.attempts == 2
    assert count.read_text().split() == ["n1", "n2", "n3", "n4", "n5", "n6"]
    events = await all_events(store, run_id)
    assert_exact_log(events)
    assert "run.resumed" not in {e.type for e in events}  # nothing to resume from
    requeued = next(e for e in events if e.type == "run.requeued")
    assert requeued.data["takeover"] == "lease_expired_without_progress"


async def test_crash_after_the_last_checkpoint_before_finish_reruns_nothing(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """Fault point worker.before_finish: every node ran and was checkpointed, the worker
    dies before writing `completed`. The next worker finds the finished checkpoint of
    this run and completes it without running any node again."""
    count = tmp_path / "count.log"
    run_id = await _accept(store, count)
    async with after_fault(db_url, tmp_path, "worker.before_finish") as second:
        final = await wait_for_status(store, run_id, {"completed", "failed"}, proc=second)
    # every step was saved in the attempt that lost its worker: it is given back
    assert final.status == RunStatus.COMPLETED and final.attempts == 1
    assert final.result == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]}
    assert count.read_text().split() == ["n1", "n2", "n3", "n4", "n5", "n6"]
    events = await all_events(store, run_id)
    assert_exact_log(events)
    resumed = next(e for e in events if e.type == "run.resumed")
    assert resumed.data["next"] == []


async def test_killing_the_whole_server_loses_nothing(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """`outlast serve` (API and worker in one process, as on the embedded default) is
    killed with SIGKILL mid-run and started again: the run, accepted over HTTP before the
    crash, completes, and its stream is exact."""
    import httpx

    from tests.procs import start_server

    count = tmp_path / "count.log"
    server, url = start_server(db_url, tmp_path / "s1.log")
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            response = await client.post(
                "/v1/runs",
                json={
                    "graph": "counted",
                    "input": {},
                    "config": {"configurable": {"count_file": str(count), "block_at": "n3"}},
                },
            )
            assert response.status_code == 202
            run_id = response.json()["id"]
            await wait_for_file(count.with_suffix(".entered"))
        kill(server)
        server, url = start_server(db_url, tmp_path / "s2.log")
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            final = await wait_result(client, run_id)
            assert final["status"] == "completed"
            assert final["result"] == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]}
    finally:
        kill(server)
    assert count.read_text().split() == ["n1", "n2", "n3", "n3", "n4", "n5", "n6"]
    assert_exact_log(await all_events(store, run_id))


async def test_a_timer_survives_a_restart_of_every_process(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """The timer is due while no process runs; the next server wakes it at once."""
    import datetime as dt

    import httpx

    from tests.procs import start_server

    server, url = start_server(db_url, tmp_path / "s1.log")
    # Due after the server is up (its start-up time must not eat the sleep).
    until = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1.5)
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            response = await client.post(
                "/v1/runs",
                json={
                    "graph": "sleeper",
                    "input": {},
                    "config": {"configurable": {"until": until.isoformat()}},
                },
            )
            run_id = response.json()["id"]
            await wait_for_status(store, run_id, {"waiting"})
        kill(server, signal.SIGTERM)
        while dt.datetime.now(dt.UTC) < until + dt.timedelta(seconds=0.3):
            parked = await store.get_run(run_id)
            assert parked is not None and parked.status == RunStatus.WAITING  # nobody wakes it
            await asyncio.sleep(0.05)
        server, url = start_server(db_url, tmp_path / "s2.log")
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            final = await wait_result(client, run_id)
        assert final["status"] == "completed"
        woke = dt.datetime.fromisoformat(final["result"]["got"])
        assert woke >= until
    finally:
        kill(server)
    events = await all_events(store, run_id)
    assert_exact_log(events)
    ended = next(e for e in events if e.type == "wait.ended")
    assert ended.data["how"] == "timer"
