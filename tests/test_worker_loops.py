"""The worker supervises its own loops: one that raises is restarted and the worker keeps
its leases; one that keeps failing stops the worker, and `outlast serve` exits non-zero."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast import faults
from outlast.retry import RetryPolicy
from outlast.runtime.loops import LoopFailed, Restarts, supervised
from outlast.runtime.metrics import REGISTRY
from outlast.store import Store
from tests.harness import make_settings, post_run, serve, wait_result
from tests.procs import kill, start_server, wait_for_status

QUICK = Restarts(RetryPolicy(0.001, maximum_interval=0.01), max_failures=3, window=60.0)


def _restarts(loop: str) -> float:
    value = REGISTRY.get_sample_value("outlast_worker_loop_restarts_total", {"loop": loop})
    return value or 0.0


async def test_a_loop_that_raises_is_restarted_until_it_ends() -> None:
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise RuntimeError("transient")

    before = _restarts("flaky")
    await supervised("flaky", flaky, asyncio.Event(), QUICK)
    assert calls == 3 and _restarts("flaky") == before + 2


async def test_a_loop_that_keeps_failing_gives_up() -> None:
    calls = 0

    async def broken() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("always")

    with pytest.raises(LoopFailed) as failed:
        await supervised("broken", broken, asyncio.Event(), QUICK)
    assert calls == QUICK.max_failures and failed.value.loop == "broken"
    assert isinstance(failed.value.__cause__, RuntimeError)


def test_the_backoff_doubles_up_to_its_cap() -> None:
    restarts = Restarts()
    assert [restarts.delay(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.8]
    assert restarts.delay(12) == restarts.backoff.maximum_interval


async def test_a_heartbeat_that_raises_once_is_restarted_and_keeps_the_leases(
    store: Store, monkeypatch: Any
) -> None:
    monkeypatch.setenv(faults.ENV, f"{faults.HEARTBEAT_LOOP}:{faults.RAISE_ONCE}")
    monkeypatch.setattr(faults, "_fired", set())
    # The run lasts several leases: a heartbeat that stayed dead would let it be reaped.
    settings = make_settings(worker_lease_ttl=1.5, worker_heartbeat=0.2, reaper_interval=0.2)
    before = _restarts("heartbeat")
    async with serve(store, settings) as srv:
        config = {"configurable": {"rounds": 20, "step_delay": 0.25}, "recursion_limit": 100}
        run = await post_run(srv.client, graph="looper", input={}, config=config)
        final = await wait_result(srv.client, run["id"], timeout=120)
        assert final["status"] == "completed" and final["result"]["n"] == 20
        assert final["attempts"] == 1  # never reaped, never taken over
        events = await store.read_events(run["id"], 0, 10_000)
        assert not [e.type for e in events if e.type in ("run.requeued", "run.released")]
    assert faults.HEARTBEAT_LOOP in faults._fired  # the fault did fire, under the lease
    assert _restarts("heartbeat") == before + 1


@pytest.mark.slow
async def test_serve_exits_non_zero_when_a_loop_keeps_failing(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    # A lease longer than the restarts take: the worker gives up before its leases would
    # expire, and drains its run back to the queue itself.
    proc, url = start_server(
        db_url,
        log,
        OUTLAST_FAULTS=f"{faults.HEARTBEAT_LOOP}:{faults.RAISE}",
        OUTLAST_WORKER_LEASE_TTL="20",
    )
    try:
        config = {"configurable": {"rounds": 400, "step_delay": 0.1}, "recursion_limit": 1000}
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            run = await post_run(client, graph="looper", input={}, config=config)
        # The heartbeat raises on each turn while the run is held: the worker gives up.
        code = await asyncio.to_thread(proc.wait, 120)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise AssertionError(f"serve did not exit: {log.read_text(errors='replace')}") from None
    output = log.read_text(errors="replace")
    assert code == 1, output
    assert "worker loop heartbeat failed 5 times" in output and "InjectedFault" in output
    # The run was drained back to the queue for the process that replaces this one.
    await wait_for_status(store, run["id"], {"queued"}, timeout=30)
    events = [e.type for e in await store.read_events(run["id"], 0, 10_000)]
    assert "run.released" in events and "run.requeued" not in events  # drained, not reaped
