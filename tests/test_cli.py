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


async def test_secrets_check_and_rotate_a_key(tmp_path: Path) -> None:
    """Rotation: a new key put first, the secrets re-sealed with it, the old key dropped;
    a key set that opens nothing is an error that names what it cannot open and changes
    nothing."""
    import os

    from cryptography.fernet import Fernet

    from outlast.secretbox import SecretBox
    from outlast.store import WaitSpec
    from outlast.store.outbox import NewWebhook
    from outlast.vocabulary import WaitKind
    from tests.harness import open_sqlite
    from tests.store_contract.support import claimed

    old, new, stranger = (Fernet.generate_key().decode() for _ in range(3))
    box = SecretBox([old.encode()])
    store = await open_sqlite(tmp_path)
    try:
        hook, _ = await store.create_webhook(
            NewWebhook(
                url="https://example.com/h",
                events=("run.completed",),
                principal="",
                secret=box.seal("whsec"),
            )
        )
        run, lease = await claimed(store)
        await store.park(lease, [WaitSpec("i", WaitKind.AUTH, object={"scope": "gh"})], 0)
        (wait,) = await store.list_waits(run.id)
        await store.answer(run.id, wait.id, box.seal_answer("ghp_token"))
    finally:
        await store.close()

    def secrets(command: str, keys: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "OUTLAST_DATABASE_URL": f"sqlite:///{tmp_path / 'outlast.db'}",
            "OUTLAST_SECRET_KEYS": keys,
            "COLUMNS": "200",
        }
        return subprocess.run(
            [sys.executable, "-m", "outlast.cli", "secrets", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    checked = secrets("check", f"{new},{old}")
    assert checked.returncode == 0, checked.stderr
    assert "2 sealed secret(s): 0 with the first key, 2 with an older key" in checked.stderr
    rotated = secrets("rotate", f"{new},{old}")
    assert rotated.returncode == 0 and "(2 re-sealed)" in rotated.stderr, rotated.stderr
    alone = secrets("check", new)  # the old key can go now
    assert alone.returncode == 0 and "2 with the first key" in alone.stderr, alone.stderr
    wrong = secrets("rotate", stranger)
    assert wrong.returncode == 1 and "2 unreadable" in wrong.stderr, wrong.stderr
    assert "put the key that sealed them back" in wrong.stderr
    assert secrets("check", new).returncode == 0  # nothing was changed
    store = await open_sqlite(tmp_path)
    try:
        after = SecretBox([new.encode()])
        found = await store.get_webhook(hook.id)
        assert found is not None and after.open(found.secret or "") == "whsec"
        answered = await store.get_wait(run.id, wait.id)
        assert after.open_answer(answered.answer) == "ghp_token"
    finally:
        await store.close()
