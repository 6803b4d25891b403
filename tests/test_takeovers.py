"""Takeovers with real processes: attempts count the run's failures, not the
infrastructure's (issue 44).

A worker starved of CPU renews its leases late; another worker's reaper takes its run
over. That is the machine's failure, not the run's: a run that saved a step since its
claim gets the attempt back, however many times it is taken over. A run that kills every
worker it is given before it saves anything (a poison pill) is still stopped after
``max_attempts``, and says why.

The starved worker is a real process stopped with SIGSTOP, in bursts shorter than its
lease (it renews late, within the lease) and longer (another worker takes its run over),
as a loaded machine starves a process; Postgres only, as in ``tests/test_crash.py``: on
SQLite a process stopped inside one of its write transactions holds the file's only
write lock, so nobody can take over until it thaws.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
from pathlib import Path

import pytest

from outlast.runtime.accept import RunRequest
from outlast.store import Event, RunStatus, Store
from tests.harness import NotYet, eventually
from tests.procs import (
    FAST_LEASES,
    all_events,
    assert_exact_log,
    kill,
    start_worker,
    wait_for_status,
)
from tests.util import accept

pytestmark = pytest.mark.slow

PROGRESSED, STALLED = "lease_expired_with_progress", "lease_expired_without_progress"
LEASE = float(FAST_LEASES["OUTLAST_WORKER_LEASE_TTL"])


async def _accept(store: Store, count_file: Path, max_attempts: int, **conf: object) -> str:
    run, _ = await accept(
        store,
        RunRequest(
            graph="counted",
            input={},
            config={"configurable": {"count_file": str(count_file), **conf}},
        ),
        graphs=["counted"],
        max_attempts=max_attempts,
    )
    return run.id


def _pid(worker_id: str) -> int:
    """The process of a worker id (``host:pid:suffix``, runtime/worker.py)."""
    return int(worker_id.rsplit(":", 2)[1])


def _takeovers(events: list[Event]) -> list[Event]:
    return [e for e in events if e.data.get("takeover")]


async def _saving_holder(store: Store, run_id: str) -> str:
    """The worker that holds the run once its attempt has saved a step since its claim
    (a ``node.updated`` after its ``run.started``): a takeover now is one with progress."""

    async def probe() -> str:
        run = await store.get_run(run_id)
        assert run is not None and not run.terminal, f"the run ended first: {run}"
        if run.status != RunStatus.RUNNING or run.worker_id is None:
            raise NotYet(run)
        events = await all_events(store, run_id)
        started = max(e.seq for e in events if e.type == "run.started")
        if not any(e.seq > started and e.type == "node.updated" for e in events):
            raise NotYet(f"no step saved since seq {started}")
        return run.worker_id

    return await eventually(probe, every=0.05, what="the run's holder saving a step")


@pytest.mark.parametrize("backend", ["postgres"])
async def test_a_starved_worker_costs_its_run_no_attempt(
    store: Store, db_url: str, tmp_path: Path, backend: str
) -> None:
    """The scale-out failure of issue 44, made to happen: the worker holding a run that
    is making progress is starved (SIGSTOP) past its lease, twice, and the other worker
    takes the run over each time. With ``max_attempts`` 2 each takeover used to spend an
    attempt, and the second failed the run; now it completes."""
    count = tmp_path / "count.log"
    procs: dict[int, subprocess.Popen[bytes]] = {}
    for name in ("w1", "w2"):
        proc = start_worker(db_url, tmp_path / f"{name}.log")
        procs[proc.pid] = proc
    try:
        for name in ("w1", "w2"):  # both up and listening before the run is accepted
            log = tmp_path / f"{name}.log"
            await eventually(
                lambda log=log: "outlast worker" in log.read_text(errors="replace"),
                what=f"{name}: the worker up",
            )
        run_id = await _accept(store, count, max_attempts=2, step_delay=0.6)
        while len(_takeovers(await all_events(store, run_id))) < 2:
            # a burst shorter than the lease: the worker renews late, keeps its run
            holder = procs[_pid(await _saving_holder(store, run_id))]
            holder.send_signal(signal.SIGSTOP)
            await asyncio.sleep(LEASE / 5)
            holder.send_signal(signal.SIGCONT)
            # one longer than the lease: stopped until the other worker has its run
            holder = procs[_pid(await _saving_holder(store, run_id))]
            before = len(_takeovers(await all_events(store, run_id)))
            holder.send_signal(signal.SIGSTOP)
            try:
                await _taken_over(store, run_id, before)
            finally:
                holder.send_signal(signal.SIGCONT)
        final = await wait_for_status(store, run_id, {"completed", "failed", "cancelled"})
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGCONT)
            kill(proc, signal.SIGTERM)
    tails = [(tmp_path / f"{n}.log").read_text(errors="replace")[-3000:] for n in ("w1", "w2")]
    assert final.status == RunStatus.COMPLETED, (final.error, *tails)
    assert final.result == {"done": ["n1", "n2", "n3", "n4", "n5", "n6"]}
    events = await all_events(store, run_id)
    assert_exact_log(events)
    takeovers = _takeovers(events)
    progressed = [e for e in takeovers if e.data["takeover"] == PROGRESSED]
    assert len(progressed) >= 2, [e.data for e in takeovers]
    assert all(e.data["counted"] is False for e in progressed)
    # a takeover without progress (the machine starved a worker right after a claim)
    # counts, and only that kind does
    stalled = [e for e in takeovers if e.data["takeover"] == STALLED]
    assert all(e.data["counted"] is True for e in stalled)
    assert final.attempts == 1 + len(stalled)


async def _taken_over(store: Store, run_id: str, before: int) -> None:
    """Until the run's log has a takeover more than ``before``. A worker stopped inside
    a checkpoint write holds the run's row (the fence's lock), which the reaper passes
    over: it is not taken over then, and the caller's next burst tries again."""

    async def probe() -> bool:
        return len(_takeovers(await all_events(store, run_id))) > before

    with contextlib.suppress(AssertionError):
        await eventually(probe, timeout=LEASE * 6, every=0.05, what="a takeover")


async def test_a_poison_pill_fails_after_max_attempts_and_says_so(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    """A node that SIGKILLs its worker each time, before the run saves any step: every
    worker that takes the run dies, and the test starts another (two are up at any time,
    so the next one is ready when one dies). Each takeover counts, and at
    ``max_attempts`` the next reaper fails the run as a poison pill, instead of handing
    it to the next worker to kill."""
    count = tmp_path / "count.log"
    run_id = await _accept(store, count, max_attempts=2, kill_at="n1")
    started = [start_worker(db_url, tmp_path / f"w{n}.log") for n in range(2)]
    live, dead = list(started), []
    try:
        while True:

            async def dead_or_ended() -> subprocess.Popen[bytes] | str:
                run = await store.get_run(run_id)
                if run is not None and run.terminal:
                    return "ended"
                for proc in live:
                    if proc.poll() is not None:
                        return proc
                raise NotYet(run)

            found = await eventually(dead_or_ended, what="a worker dead or the run ended")
            if isinstance(found, str):
                break
            assert found.returncode == -signal.SIGKILL, found.returncode
            live.remove(found)
            dead.append(found)
            assert len(dead) <= 2, "a worker killed after the last attempt"
            started.append(start_worker(db_url, tmp_path / f"w{len(started)}.log"))
            live.append(started[-1])
    finally:
        for proc in started:
            kill(proc, signal.SIGTERM)
    assert len(dead) == 2, "one worker killed per attempt"
    final = await store.get_run(run_id)
    assert final is not None and final.status == RunStatus.FAILED
    assert final.error is not None and final.error["type"] == "worker_lost"
    assert "poison pill" in final.error["reason"] and final.error["attempts"] == 2
    assert count.read_text().split() == ["n1", "n1"]
    events = await all_events(store, run_id)
    assert_exact_log(events)
    lifecycle = [e.type for e in events if e.type.startswith("run.") and e.type != "run.resumed"]
    assert lifecycle == [
        "run.created",
        "run.started",
        "run.requeued",
        "run.started",
        "run.failed",
    ]
    takeovers = [(e.type, e.data["takeover"], e.data["counted"]) for e in _takeovers(events)]
    assert takeovers == [("run.requeued", STALLED, True), ("run.failed", STALLED, True)]
    failed = events[-1].data["error"]
    assert failed["type"] == "worker_lost" and "poison pill" in failed["message"]
