"""Test tiers and backends.

Every store-level and API-level test runs on both backends: SQLite in a temp folder, and
Postgres in a database created for this test session. Postgres comes from
``OUTLAST_TEST_DATABASE_URL`` (default: the local server). Without a reachable Postgres
those tests skip, unless ``OUTLAST_REQUIRE_POSTGRES=1`` (set by ``.ci/run``): then they fail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest

from outlast.store import Store, pg_tx, sqlite_db
from outlast.store.postgres import PostgresStore
from tests.harness import ADMIN_URL, create_database, open_pg, open_sqlite

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh database for this session, dropped at the end."""
    url = create_database("outlast_test")
    yield url
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        name = url.rsplit("/", 1)[-1]
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# The suite's default timeout (pyproject.toml) only stops a hung test. Tests that start
# processes (marked ``slow``) start several Python interpreters each, which takes tens of
# seconds on two cores shared with other suites: they get longer before they count as hung.
SLOW_TIMEOUT = 600.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT))
    # xdist hands tests out in this order: a test of a minute or more handed out last
    # would run alone at the end while the other workers idle.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database URL a server or worker process of this test would be given."""
    if backend == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'outlast.db'}"


@pytest.fixture
async def store(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Store]:
    if backend == "postgres":
        s: Store = await open_pg(request.getfixturevalue("pg_url"))
    else:
        s = await open_sqlite(tmp_path)
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def pg(pg_url: str) -> AsyncIterator[PostgresStore]:
    """A Postgres store for the tests of Postgres-only mechanisms (fencing, the pool,
    carried events)."""
    store = await open_pg(pg_url)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every named statement sent through a Tx of either backend, by name."""
    sent: Counter[str] = Counter()
    for tx_class in (sqlite_db.SqliteTx, pg_tx.PgTx):
        original = tx_class.rows

        async def counted(
            self: Any, name: str, _original: Any = original, **params: Any
        ) -> list[Mapping[str, Any]]:
            sent[name] += 1
            rows: list[Mapping[str, Any]] = await _original(self, name, **params)
            return rows

        monkeypatch.setattr(tx_class, "rows", counted)
    yield sent
