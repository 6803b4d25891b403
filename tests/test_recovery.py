"""A resumed run logs the node.updated events an earlier attempt lost: the checkpoints
say which steps ran, the log must show each of them once."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from outlast.graph.registry import GraphRegistry
from outlast.runtime.outcomes import run_config
from outlast.store import EventDraft, Lease, Store
from tests.harness import GRAPHS, serve, wait_result
from tests.procs import all_events, assert_exact_log
from tests.util import new_run

NODES = ["plan", "gather", "draft", "review", "finish"]


async def _ran_without_its_events(store: Store) -> tuple[str, list[str]]:
    """A run whose first attempt executed every step (all checkpoints written) while none
    of its events reached the log, as when the event appends fail (or the process dies)
    while the checkpoint writes still land; then the attempt's lease runs out. Returns
    the run id and the task ids of its five steps, in order."""
    new = new_run(graph="steps", input={"topic": "t"})
    run, _ = await store.create_run(new)
    (claimed,) = await store.claim("ghost", 0.2, 1)
    lease = Lease(run.id, "ghost", claimed.lease_epoch)
    graph = (
        GraphRegistry.from_config(GRAPHS)
        .static("steps")
        .copy(update={"checkpointer": store.checkpointer(lease)})
    )
    config = run_config(claimed)
    await graph.ainvoke(run.input, config)
    tasks: list[str] = []
    async for snapshot in graph.aget_state_history(config):
        tasks[:0] = [t.id for t in snapshot.tasks if t.name in NODES]
    assert len(tasks) == len(NODES)
    return run.id, tasks


class _Died(Exception):
    pass


async def _died_after_writes(store: Store) -> tuple[str, dict[str, str]]:
    """A first attempt that ran ``plan`` and ``gather`` and died after ``gather``'s writes
    were saved but before the checkpoint of its step: the resumed checkpoint's only task
    already has its writes, so LangGraph's ``next`` is empty though three nodes remain."""
    run, _ = await store.create_run(new_run(graph="steps", input={"topic": "t"}))
    (claimed,) = await store.claim("ghost", 0.2, 1)
    lease = Lease(run.id, "ghost", claimed.lease_epoch)
    saver = store.checkpointer(lease)
    put = saver.aput
    puts = 0

    async def aput(config: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal puts
        puts += 1
        if puts == 4:  # input, after __start__, after plan, *after gather*
            while True:  # until gather's writes are saved; then die
                saved = await saver.aget_tuple(config)
                if saved is not None and saved.pending_writes:
                    raise _Died
                await asyncio.sleep(0.01)
        return await put(config, *args, **kwargs)

    saver.aput = aput  # type: ignore[method-assign]
    graph = GraphRegistry.from_config(GRAPHS).static("steps").copy(update={"checkpointer": saver})
    with contextlib.suppress(_Died):
        await graph.ainvoke(run.input, run_config(claimed))
    state = await graph.aget_state(run_config(claimed))
    assert state.next == () and [t.name for t in state.tasks] == ["gather"]
    tasks = {
        t.name: t.id async for h in graph.aget_state_history(run_config(claimed)) for t in h.tasks
    }
    return run.id, tasks


async def _resume(store: Store, run_id: str) -> dict[str, Any]:
    # the server's reaper requeues the run once the ghost's 200 ms lease has passed
    async with serve(store) as server:
        return await wait_result(server.client, run_id)


async def test_steps_whose_events_were_lost_are_logged_on_resume(store: Store) -> None:
    run_id, tasks = await _ran_without_its_events(store)
    result = await _resume(store, run_id)
    assert result["status"] == "completed"
    events = await all_events(store, run_id)
    assert_exact_log(events)
    updated = [e.data for e in events if e.type == "node.updated"]
    assert [u["node"] for u in updated] == NODES
    assert [u["task"] for u in updated] == tasks
    assert all(u["recovered"] for u in updated)
    assert updated[-1]["update"]["steps"] == ["finish"]
    assert events[-1].type == "run.completed"


async def test_only_the_missing_ones_are_logged(store: Store) -> None:
    run_id, tasks = await _ran_without_its_events(store)
    # the first two steps' events made it before the failure
    run = await store.get_run(run_id)
    assert run is not None and run.worker_id == "ghost"
    lease = Lease(run_id, "ghost", run.lease_epoch)
    await store.append(
        lease,
        [
            EventDraft("node.updated", {"node": n, "ns": "", "update": {}, "task": t})
            for n, t in zip(NODES[:2], tasks[:2], strict=True)
        ],
    )
    await _resume(store, run_id)
    events = await all_events(store, run_id)
    assert_exact_log(events)
    updated = [e.data for e in events if e.type == "node.updated"]
    assert [u["node"] for u in updated] == NODES  # each step once
    assert [bool(u.get("recovered")) for u in updated] == [False, False, True, True, True]


async def test_a_step_whose_writes_were_saved_is_not_mistaken_for_the_end(store: Store) -> None:
    run_id, _ = await _died_after_writes(store)
    result = await _resume(store, run_id)
    assert result["status"] == "completed"
    assert result["result"]["steps"] == NODES  # draft, review and finish ran too
    events = await all_events(store, run_id)
    assert_exact_log(events)
    updated = [e.data for e in events if e.type == "node.updated"]
    assert [u["node"] for u in updated] == NODES
    # plan's from the checkpoint history, gather's from its saved writes, the rest as run
    assert [bool(u.get("recovered")) for u in updated] == [True, False, False, False, False]


async def test_saved_writes_whose_event_was_logged_are_not_logged_again(store: Store) -> None:
    run_id, tasks = await _died_after_writes(store)
    run = await store.get_run(run_id)
    assert run is not None
    lease = Lease(run_id, "ghost", run.lease_epoch)
    logged = [
        EventDraft("node.updated", {"node": n, "ns": "", "update": {}, "task": tasks[n]})
        for n in ("plan", "gather")
    ]
    await store.append(lease, logged)
    await _resume(store, run_id)
    events = await all_events(store, run_id)
    assert_exact_log(events)
    assert [e.data["node"] for e in events if e.type == "node.updated"] == NODES
