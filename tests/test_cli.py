"""The CLI as a user runs it: separate processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg

from outlast.store.sqlfiles import migrations

ROOT = Path(__file__).parent.parent


def _outlast(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "outlast.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_migrate_sqlite_default_then_up_to_date(tmp_path: Path) -> None:
    first = _outlast("migrate", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "applied 0001_runs_and_events" in first.stderr
    assert (tmp_path / ".outlast" / "outlast.db").exists()
    again = _outlast("migrate", cwd=tmp_path)
    assert again.returncode == 0 and "up to date" in again.stderr


def test_concurrent_migrations_on_postgres_apply_once(tmp_path: Path) -> None:
    from tests.harness import ADMIN_URL, with_db

    name = f"outlast_cli_{tmp_path.name[-8:].replace('-', '_').lower()}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_db(ADMIN_URL, name)
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "outlast.cli", "migrate", "--database-url", url],
                cwd=tmp_path,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        outputs = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outputs
        assert sum("applied 0001_runs_and_events" in o for o in outputs) == 1
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT version FROM outlast_migrations ORDER BY 1").fetchall()
        assert rows == [(m.version,) for m in migrations("postgres")]
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_bad_database_url_is_a_clear_error(tmp_path: Path) -> None:
    result = _outlast("migrate", "--database-url", "mysql://x", cwd=tmp_path)
    assert result.returncode != 0
    assert "unsupported database URL" in result.stderr
