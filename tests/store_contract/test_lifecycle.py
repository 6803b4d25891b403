"""Opening, migrating, pinging and closing a store, and what it hands out once open."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from outlast.errors import StoreUnavailable
from outlast.store import Lease, Store
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore
from tests.harness import open_pg, open_sqlite


async def test_open_is_idempotent_and_migrate_applies_once(store: Store) -> None:
    await store.open()  # opening an open store changes nothing
    assert await store.migrate() == []  # everything was applied by the fixture
    await store.ping()
    assert store.backend in ("sqlite", "postgres")
    assert isinstance(store.checkpointer(), BaseCheckpointSaver)
    lease = Lease("00000000-0000-0000-0000-000000000000", "w", 1)
    assert isinstance(store.checkpointer(lease), BaseCheckpointSaver)


async def test_a_fresh_database_migrates_and_a_closed_store_refuses(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        fresh: Store = SqliteStore(tmp_path / "new.db", tmp_path / "new.checkpoints.db")
        with pytest.raises(RuntimeError):
            _ = fresh.items  # no item store before open()
        await fresh.open()
        applied = await fresh.migrate()
        assert applied and applied == sorted(applied)
        assert applied[0].startswith("0001_")
        await fresh.close()
        with pytest.raises(RuntimeError):
            fresh.checkpointer()
        reopened = await open_sqlite(tmp_path)  # another file: migrates from scratch
    else:
        reopened = await open_pg(request.getfixturevalue("pg_url"), truncate=False)
    try:
        await reopened.ping()
    finally:
        await reopened.close()
    with pytest.raises((StoreUnavailable, RuntimeError)):
        await reopened.ping()


async def test_an_unreachable_database_is_unavailable(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        blocked = tmp_path / "file"
        blocked.write_text("")
        store: Store = SqliteStore(blocked / "outlast.db", blocked / "checkpoints.db")
    else:
        store = PostgresStore("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises((StoreUnavailable, OSError)):
        await store.open()
