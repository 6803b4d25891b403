"""``sql/<backend>/schema.sql`` says what the migrations build, and stays true.

Each backend's migrations are applied to an empty database (by the store's own
``migrate``), ``schema.sql`` is run on another empty one, and the two catalogs are
compared after normalising what does not matter (whitespace, comments, the case of a
type name): columns in order with their types, nullability and defaults, keys, checks,
foreign keys, indexes, functions, triggers. A migration that changes the schema without
the schema file fails here, and so does one that leaves the file's "Up to migration"
line behind.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
import pytest

from outlast.store.postgres import PostgresStore
from outlast.store.sqlfiles import migrations
from outlast.store.sqlite import SqliteStore
from tests.harness import ADMIN_URL, create_database

_UP_TO = re.compile(r"^-- Up to migration: (\d{4})_(\w+)$", re.MULTILINE)


def schema_file(backend: str) -> str:
    return (
        resources.files("outlast.store")
        .joinpath("sql", backend, "schema.sql")
        .read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_schema_file_names_the_last_migration(backend: str) -> None:
    last = migrations(backend)[-1]
    found = _UP_TO.search(schema_file(backend))
    assert found is not None, f"sql/{backend}/schema.sql has no '-- Up to migration:' line"
    assert (int(found.group(1)), found.group(2)) == (last.version, last.name), (
        f"sql/{backend}/schema.sql describes the schema up to {found.group(0)!r}, but the "
        f"last migration is {last.version:04d}_{last.name}: bring the file up to date"
    )


# -- SQLite ------------------------------------------------------------------------------


def _sql(text: str) -> str:
    """Statement text without comments, whitespace runs or spaces around punctuation."""
    text = re.sub(r"--[^\n]*", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([(),])\s*", r"\1", text)


def _checks(create: str) -> list[str]:
    """The CHECK clauses of a CREATE TABLE, each with its balanced parentheses."""
    found = []
    for match in re.finditer(r"\bCHECK\s*\(", create, re.IGNORECASE):
        depth, i = 0, match.end() - 1
        for j in range(i, len(create)):
            depth += {"(": 1, ")": -1}.get(create[j], 0)
            if depth == 0:
                found.append(create[i : j + 1])
                break
    return sorted(found)


def sqlite_catalog(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(path)
    try:
        tables: dict[str, Any] = {}
        rows = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'outlast_%'"
        ).fetchall()
        for name, create in sorted(rows):
            text = _sql(create)
            indexes = []
            for _, index, unique, origin, partial in conn.execute(f"PRAGMA index_list({name})"):
                keys = [r[1:] for r in conn.execute(f"PRAGMA index_xinfo({index})")]
                indexes.append((index, unique, origin, partial, keys))
            tables[name] = {
                "columns": [
                    (r[1], r[2].upper(), r[3], r[4], r[5], r[6])
                    for r in conn.execute(f"PRAGMA table_xinfo({name})")
                ],
                "foreign keys": sorted(
                    r[2:] for r in conn.execute(f"PRAGMA foreign_key_list({name})")
                ),
                "checks": _checks(text),
                "indexes": sorted(indexes),
                "without rowid": "WITHOUT ROWID" in text.upper(),
                "autoincrement": "AUTOINCREMENT" in text.upper(),
            }
        others = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE type != 'table' AND sql IS NOT NULL"
        ).fetchall()
        return {
            "tables": tables,
            "others": sorted((t, n, tbl, _sql(s)) for t, n, tbl, s in others),
        }
    finally:
        conn.close()


async def test_sqlite_migrations_build_what_the_schema_file_says(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "migrated.db", tmp_path / "migrated.checkpoints.db")
    await store.open()
    try:
        await store.migrate()
    finally:
        await store.close()
    described = tmp_path / "described.db"
    conn = sqlite3.connect(described)
    conn.executescript(schema_file("sqlite"))
    conn.close()
    migrated = sqlite_catalog(tmp_path / "migrated.db")
    assert migrated["tables"], "the migrations made no outlast_ table"
    assert sqlite_catalog(described) == migrated


# -- Postgres ----------------------------------------------------------------------------

_PG_CATALOG = {
    "relations": """
        SELECT relname, relkind::text FROM pg_class
        WHERE relnamespace = 'public'::regnamespace AND relname LIKE 'outlast\\_%'
          AND relkind IN ('r', 'p', 'v', 'm', 'S')
        ORDER BY relname""",
    "columns": """
        SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default,
               is_identity, identity_generation, is_generated, generation_expression
        FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name LIKE 'outlast\\_%'
        ORDER BY table_name, ordinal_position""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
        FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text LIKE 'outlast\\_%'
        ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename LIKE 'outlast\\_%'
        ORDER BY 1, 2""",
    "functions": """
        SELECT proname, pg_get_function_identity_arguments(oid), pg_get_functiondef(oid)
        FROM pg_proc
        WHERE pronamespace = 'public'::regnamespace AND proname LIKE 'outlast\\_%'
        ORDER BY 1, 2""",
    "triggers": """
        SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger
        WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'outlast\\_%'
        ORDER BY 1, 2""",
    "sequences": """
        SELECT sequencename, data_type::text, start_value, increment_by, cycle
        FROM pg_sequences WHERE schemaname = 'public' AND sequencename LIKE 'outlast\\_%'
        ORDER BY 1""",
}


def pg_catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {
            part: [tuple(row) for row in conn.execute(query).fetchall()]
            for part, query in _PG_CATALOG.items()
        }


@pytest.fixture
def empty_pg() -> Iterator[Callable[[], str]]:
    """Empty databases on the test server, made on demand and dropped afterwards."""
    made: list[str] = []

    def make() -> str:
        url = create_database("outlast_schema")
        made.append(url.rsplit("/", 1)[-1])
        return url

    yield make
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        for name in made:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_postgres_migrations_build_what_the_schema_file_says(
    empty_pg: Callable[[], str],
) -> None:
    migrated_url, described_url = empty_pg(), empty_pg()
    store = PostgresStore(migrated_url, max_size=2)
    await store.open()
    try:
        await store.migrate()
    finally:
        await store.close()
    with psycopg.connect(described_url, autocommit=True) as conn:
        conn.execute(schema_file("postgres").encode())
    migrated = pg_catalog(migrated_url)
    assert migrated["columns"] and migrated["functions"], "the migrations made no outlast_ objects"
    described = pg_catalog(described_url)
    for part in _PG_CATALOG:
        assert described[part] == migrated[part], part
