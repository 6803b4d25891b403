"""Test tiers and backends.

Every store-level and API-level test runs on both backends: SQLite in a temp folder, and
Postgres in a database created for this test session. Postgres comes from
``OUTLAST_TEST_DATABASE_URL`` (default: the local server). Without a reachable Postgres
those tests skip, unless ``OUTLAST_REQUIRE_POSTGRES=1`` (set by ``.ci/run``): then they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from outlast.store import Store
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore

ADMIN_URL = os.environ.get(
    "OUTLAST_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("OUTLAST_REQUIRE_POSTGRES") == "1"
BACKENDS = ["sqlite", "postgres"]


def _with_db(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh database for this session, dropped at the end."""
    name = f"outlast_test_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        if REQUIRE_PG:
            pytest.fail(f"OUTLAST_REQUIRE_POSTGRES=1 but Postgres is unreachable: {exc}")
        pytest.skip(f"Postgres unreachable at {ADMIN_URL}: {exc}")
    url = _with_db(ADMIN_URL, name)
    yield url
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_migrated: set[str] = set()

TABLES = (
    "outlast_events, outlast_waits, outlast_signals, outlast_effects, outlast_lg_runs,"
    " outlast_runs, outlast_threads, outlast_assistant_versions, outlast_assistants,"
    " checkpoints, checkpoint_blobs, checkpoint_writes,"
    # LangGraph's item store (store/items.py); its store_migrations table stays.
    " store"
)


async def open_pg(url: str, *, truncate: bool = True) -> PostgresStore:
    store = PostgresStore(url, max_size=20)
    await store.open()
    if url not in _migrated:
        await store.migrate()
        _migrated.add(url)
    if truncate:
        async with store.pool.connection() as conn:
            await conn.execute(f"TRUNCATE {TABLES}")
    return store


async def open_sqlite(folder: Path) -> SqliteStore:
    store = SqliteStore(folder / "outlast.db", folder / "checkpoints.db")
    await store.open()
    await store.migrate()
    return store


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
