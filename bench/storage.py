"""Storage: what a run of the 10-node graph leaves in Postgres, and what retention gives back.

Sizes are ``pg_total_relation_size`` (heap + TOAST + indexes) of every ``outlast_*`` and
``checkpoint*`` table, read at four points:

1. before: a fresh database after migrations (empty tables);
2. written: after ``--storage-runs`` runs through ``outlast serve`` (10 in flight), the
   server stopped. This is the disk the runs took as written, dead row versions included:
   a run row is updated a dozen times (status, lease, ``last_seq`` on every event batch)
   and each update leaves an old version until vacuum;
3. live: after ``VACUUM FULL`` of those tables, which rewrites them compactly. The
   difference to (1), over the runs, is the bytes a completed run keeps for good; over
   the steps (10 per run), per step;
4. retention: the store's own ``prune(keep=--prune-keep, max_age=30 days)`` (what the
   worker's retention loop runs, with a tighter ``keep``), then measured after a plain
   ``VACUUM`` (what autovacuum would do: the space becomes reusable by new rows and only
   empty pages at the end of a table are returned) and after ``VACUUM FULL`` (the space
   actually returned to the file system). ``DELETE`` alone frees nothing on disk.

Row counts per run are reported beside the bytes: how many events and checkpoint rows one
run writes is what drives the size.
"""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
from benchkit import Outlast, r, temp_database
from overhead import outlast_run, throughput

from outlast.config import Settings
from outlast.store import make_store

KIB = 1024
TABLES = """
SELECT c.relname::text, pg_total_relation_size(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname = 'public'
  AND (c.relname LIKE 'outlast%' OR c.relname LIKE 'checkpoint%')
ORDER BY 1
"""


async def sizes(conn: psycopg.AsyncConnection[Any]) -> dict[str, int]:
    cur = await conn.execute(TABLES)
    return {name: int(size) for name, size in await cur.fetchall()}


async def rows(conn: psycopg.AsyncConnection[Any], tables: list[str]) -> dict[str, int]:
    out = {}
    for table in tables:
        cur = await conn.execute(f'SELECT count(*) FROM "{table}"')  # type: ignore[arg-type]
        out[table] = int((await cur.fetchone())[0])  # type: ignore[index]
    return out


async def vacuum(conn: psycopg.AsyncConnection[Any], tables: list[str], full: bool) -> None:
    for table in tables:
        await conn.execute(f'VACUUM {"FULL " if full else ""}"{table}"')  # type: ignore[arg-type]


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    n = opts.storage_runs
    async with temp_database(admin_url) as db:
        server = Outlast(db, concurrency=10)
        try:
            await server.ready()
            async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
                before = await sizes(conn)
                async with httpx.AsyncClient(timeout=60.0) as client:
                    await throughput(lambda: outlast_run(client, server.base), n, 10)
        finally:
            server.stop()
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            tables = sorted(before)
            written = await sizes(conn)
            counts = await rows(conn, tables)
            await vacuum(conn, tables, full=True)
            live = await sizes(conn)
            store = make_store(Settings(database_url=db))
            await store.open()
            try:
                await store.prune(keep=opts.prune_keep, max_age=30 * 86400.0)
            finally:
                await store.close()
            pruned_rows = await rows(conn, tables)
            await vacuum(conn, tables, full=False)
            after_vacuum = await sizes(conn)
            await vacuum(conn, tables, full=True)
            after_full = await sizes(conn)

    def per_run(now: dict[str, int], then: dict[str, int]) -> float:
        return (sum(now.values()) - sum(then.values())) / n

    table = {
        t: {
            "rows_per_run": r(counts[t] / n, 2),
            "written_kib_per_run": r((written[t] - before[t]) / n / KIB, 2),
            "live_kib_per_run": r((live[t] - before[t]) / n / KIB, 2),
            "after_retention_kib_per_run": r((after_full[t] - before[t]) / n / KIB, 2),
        }
        for t in tables
    }
    outlast_live = sum(live[t] - before[t] for t in tables if t.startswith("outlast")) / n
    return {
        "runs": n,
        "steps_per_run": 10,
        "written_kib_per_run": r(per_run(written, before) / KIB),
        "live_kib_per_run": r(per_run(live, before) / KIB),
        "live_kib_per_step": r(per_run(live, before) / KIB / 10),
        "outlast_tables_live_kib_per_run": r(outlast_live / KIB),
        "checkpoint_tables_live_kib_per_run": r(per_run(live, before) / KIB - outlast_live / KIB),
        "retention": {
            "keep": opts.prune_keep,
            "max_age_s": 30 * 86400,
            "events_deleted_per_run": r(
                (counts["outlast_events"] - pruned_rows["outlast_events"]) / n, 2
            ),
            "after_vacuum_kib_per_run": r(per_run(after_vacuum, before) / KIB),
            "after_vacuum_full_kib_per_run": r(per_run(after_full, before) / KIB),
            "reclaimed_kib_per_run": r(per_run(live, after_full) / KIB),
        },
        "tables": table,
    }
