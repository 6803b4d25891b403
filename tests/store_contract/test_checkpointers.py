"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``)
against every saver outlast ships: the fenced Postgres saver with a held lease (a worker's
writes) and without one (the API's reads and deletes), and the SQLite store's saver.

The suite detects the optional capabilities (``delete_for_runs``, ``copy_thread``,
``prune``) by whether a saver overrides the method, and does not test the others. Every
detected capability passes today: ``EXPECTED_FAILURES`` is where one a saver deliberately
fails would be listed, with its reason, and ``ABSENT`` says which ones each saver lacks and
why. The test fails when either differs from what the suite reports, so a capability that
starts passing, or appears with an upgrade of LangGraph's savers, is noticed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from outlast.store import Store
from outlast.store.pg_saver import FencedPostgresSaver
from outlast.store.postgres import PostgresStore
from tests.harness import open_sqlite
from tests.store_contract.support import claimed

# saver name -> {capability: why outlast's saver does not pass it}
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "fenced-postgres-leased": {},
    "fenced-postgres-unleased": {},
    "sqlite": {},
}
# Not implemented by the upstream savers outlast's derive from (AsyncPostgresSaver,
# AsyncSqliteSaver), and nothing in outlast needs them: a thread is deleted whole
# (``adelete_thread``), never per run or copied.
_UPSTREAM = "not implemented by LangGraph's saver; outlast deletes whole threads only"
ABSENT: dict[str, dict[str, str]] = {
    "fenced-postgres-leased": {"delete_for_runs": _UPSTREAM, "copy_thread": _UPSTREAM},
    "fenced-postgres-unleased": {"delete_for_runs": _UPSTREAM, "copy_thread": _UPSTREAM},
    "sqlite": {
        "delete_for_runs": _UPSTREAM,
        "copy_thread": _UPSTREAM,
        "prune": "AsyncSqliteSaver has no aprune; outlast's retention prunes events, not "
        "checkpoints",
    },
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
