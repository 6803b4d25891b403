"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``)
against every saver outlast ships: the fenced Postgres saver with a held lease (a worker's
writes) and without one (the API's reads and deletes), and the SQLite store's saver.

The suite detects the optional capabilities (``delete_for_runs``, ``copy_thread``,
``prune``) by whether a saver overrides the method, and does not test the others. Every
detected capability passes today: ``EXPECTED_FAILURES`` is where one a saver deliberately
fails would be listed, with its reason, and ``ABSENT`` says which ones each saver lacks and
why. The test fails when either differs from what the suite reports, so a capability that
starts passing, or appears with an upgrade of LangGraph's savers, is noticed.

Then what outlast asks of ``acopy_thread`` and ``aprune`` beyond the suite (a thread's
copy and its prune, ``threads.copy`` and ``keep_latest``), on both backends, with a real
graph: a copy is the same thread under another id, subgraph calls and pending interrupts
included, and goes on alone; a copy never lands on a thread that has checkpoints; a
prune keeps each thread's state.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from outlast.errors import LeaseLost
from outlast.store import Lease, Store
from outlast.store.pg_saver import FencedPostgresSaver
from outlast.store.postgres import PostgresStore
from tests.harness import open_sqlite
from tests.store_contract.support import claimed
from tests.ttl_support import checkpoints

# saver name -> {capability: why outlast's saver does not pass it}
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "fenced-postgres-leased": {},
    "fenced-postgres-unleased": {},
    "sqlite": {},
}
# Not implemented by the upstream savers outlast's derive from (AsyncPostgresSaver,
# AsyncSqliteSaver), and nothing in outlast needs it: a thread is deleted whole
# (``adelete_thread``), never per run (a rollback goes forward: runtime/options.py).
# ``copy_thread`` (both) and ``prune`` (SQLite) upstream lacks are outlast's.
_UPSTREAM = "not implemented by LangGraph's saver; outlast deletes whole threads only"
ABSENT: dict[str, dict[str, str]] = {
    "fenced-postgres-leased": {"delete_for_runs": _UPSTREAM},
    "fenced-postgres-unleased": {"delete_for_runs": _UPSTREAM},
    "sqlite": {"delete_for_runs": _UPSTREAM},
}


async def _conformance(name: str, saver: BaseCheckpointSaver[str]) -> CapabilityReport:
    @checkpointer_test(name=name)
    async def factory() -> AsyncIterator[BaseCheckpointSaver[str]]:
        yield saver

    return await validate(factory)


def _check(report: CapabilityReport) -> None:
    name = report.checkpointer_name
    failed = {cap: r.failures for cap, r in report.results.items() if r.passed is False}
    expected = EXPECTED_FAILURES[name]
    assert set(failed) == set(expected), failed
    absent = {cap for cap, r in report.results.items() if not r.detected}
    assert absent == set(ABSENT[name])
    assert all(r.tests_passed > 0 for r in report.results.values() if r.detected)
    # the base capabilities LangGraph requires of every saver are all there
    assert all(
        report.results[cap].passed is True or cap in expected
        for cap in ("put", "put_writes", "get_tuple", "list", "delete_thread")
    )


async def test_fenced_postgres_saver_with_a_held_lease(pg: PostgresStore) -> None:
    _, lease = await claimed(pg)
    saver = pg.checkpointer(lease)
    assert isinstance(saver, FencedPostgresSaver) and saver.lease == lease
    _check(await _conformance("fenced-postgres-leased", saver))


async def test_fenced_postgres_saver_without_a_lease(pg: PostgresStore) -> None:
    saver = pg.checkpointer()
    assert isinstance(saver, FencedPostgresSaver) and saver.lease is None
    _check(await _conformance("fenced-postgres-unleased", saver))


async def test_the_sqlite_stores_saver(tmp_path: Path) -> None:
    store: Store = await open_sqlite(tmp_path)
    try:
        _check(await _conformance("sqlite", store.checkpointer()))
    finally:
        await store.close()


# -- a thread's copy and its prune, beyond the suite ----------------------------------------


class Count(TypedDict):
    n: Annotated[int, operator.add]  # inline in a Postgres checkpoint
    log: Annotated[list[str], operator.add]  # a blob of its own there


def _asking(state: Count) -> dict[str, Any]:
    return {"n": interrupt("how many?"), "log": ["asked"]}


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """``inc`` then ``sub``, a subgraph (each call a namespace ``sub:<task>``) whose
    ``ask`` waits for a number."""
    sub = StateGraph(Count)
    sub.add_node("one", lambda s: {"n": 1, "log": ["one"]})
    sub.add_node("ask", _asking)
    sub.add_edge(START, "one")
    sub.add_edge("one", "ask")
    root = StateGraph(Count)
    root.add_node("inc", lambda s: {"n": 1, "log": ["inc"]})
    root.add_node("sub", sub.compile())
    root.add_edge(START, "inc")
    root.add_edge("inc", "sub")
    return root.compile(checkpointer=saver)


def _on(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


async def _turns(graph: Any, thread_id: str, answers: list[int]) -> None:
    """One invocation per answer, each answered; then one left waiting in the subgraph."""
    for answer in answers:
        await graph.ainvoke({"n": 0, "log": []}, _on(thread_id))
        await graph.ainvoke(Command(resume=answer), _on(thread_id))
    await graph.ainvoke({"n": 0, "log": []}, _on(thread_id))


async def _seen(graph: Any, thread_id: str) -> list[Any]:
    """What a client reads of a thread: each state of its history (values, next, the
    interrupts and the waiting subgraph's own state), newest first."""
    seen = []
    async for state in graph.aget_state_history(_on(thread_id)):
        config = state.config["configurable"]
        seen.append((config["checkpoint_id"], state.values, state.next, state.interrupts))
    head = await graph.aget_state(_on(thread_id), subgraphs=True)
    inner = [t.state.values for t in head.tasks if t.state is not None]
    return [*seen, inner]


async def test_a_copied_thread_is_the_same_thread_under_another_id(store: Store) -> None:
    saver = store.checkpointer()
    graph = _graph(saver)
    await _turns(graph, "source", [10, 20])
    before = await _seen(graph, "source")
    await saver.acopy_thread("source", "copy")
    assert await _seen(graph, "copy") == before  # ids, values, interrupts, subgraph state
    assert await checkpoints(store, "copy") == await checkpoints(store, "source")
    assert len(await checkpoints(store, "copy")) == 4  # the root and three subgraph calls
    # the copy's interrupt is resumed on the copy alone: pending writes and all
    done = await graph.ainvoke(Command(resume=1000), _on("copy"))
    assert done["n"] > 1000 and done["log"][-1] == "asked"
    assert await _seen(graph, "source") == before
    # an unknown source copies nothing
    await saver.acopy_thread("nowhere", "empty")
    assert await checkpoints(store, "empty") == {}


async def test_a_copy_never_lands_on_a_thread_with_checkpoints(store: Store) -> None:
    saver = store.checkpointer()
    graph = _graph(saver)
    await _turns(graph, "source", [])
    await _turns(graph, "taken", [1])
    taken = await _seen(graph, "taken")
    with pytest.raises(ValueError, match="taken"):
        await saver.acopy_thread("source", "taken")
    assert await _seen(graph, "taken") == taken  # nothing merged into it
    await saver.acopy_thread("source", "free")
    with pytest.raises(ValueError, match="free"):
        await saver.acopy_thread("source", "free")  # not even the same copy twice


async def test_a_leased_saver_copies_only_under_its_lease(pg: PostgresStore) -> None:
    run, lease = await claimed(pg)
    await _turns(_graph(pg.checkpointer()), "source", [])
    await pg.checkpointer(lease).acopy_thread("source", "held")
    assert await checkpoints(pg, "held") == await checkpoints(pg, "source")
    lost = Lease(run.id, lease.worker_id, lease.epoch + 1)  # a lease no one holds
    with pytest.raises(LeaseLost):
        await pg.checkpointer(lost).acopy_thread("source", "fenced")
    assert await checkpoints(pg, "fenced") == {}


async def test_prune_keeps_each_threads_state_or_deletes_it(store: Store) -> None:
    saver = store.checkpointer()
    graph = _graph(saver)
    for thread_id in ("a", "b", "other"):
        await _turns(graph, thread_id, [10, 20])
    states = {t: (await graph.aget_state(_on(t), subgraphs=True)) for t in ("a", "b")}
    other = await _seen(graph, "other")
    await saver.aprune(["a", "b", "nowhere"], strategy="keep_latest")
    for thread_id, state in states.items():
        # the latest root checkpoint, and the call waiting in the subgraph, whole
        kept = await checkpoints(store, thread_id)
        assert kept[""] == 1 and len(kept) == 2 and set(kept.values()) == {1}
        after = await graph.aget_state(_on(thread_id), subgraphs=True)
        assert (after.values, after.next, after.interrupts) == (
            state.values,
            state.next,
            state.interrupts,
        )
        assert len([s async for s in graph.aget_state_history(_on(thread_id))]) == 1
    assert await _seen(graph, "other") == other  # a thread not named is not touched
    done = await graph.ainvoke(Command(resume=1000), _on("a"))  # the wait goes on
    assert done["n"] > 1000 + states["a"].values["n"]
    await saver.aprune(["a"], strategy="delete")
    assert await checkpoints(store, "a") == {}
    assert await checkpoints(store, "b") != {}
    await saver.aprune([], strategy="delete")
    with pytest.raises(TypeError):
        await saver.aprune("b")
    with pytest.raises(ValueError, match="strategy"):
        await saver.aprune(["b"], strategy="keep_some")
