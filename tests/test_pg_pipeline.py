"""A pipeline the server aborted leaves no connection that fails later.

psycopg (3.3.9) prepares a statement server-side the time it reaches its prepare
threshold (5 earlier executions). If that time comes inside a pipeline the server
aborted (an earlier statement of it failed), the server skips the statement's ``Parse``,
yet psycopg records it as prepared: every later use of it on that connection fails with
"prepared statement … does not exist". The nemesis (bench/nemesis.py) saw runs failed so
after a worker's fence was refused. ``store/pg_pool.py``'s ``pipeline()`` closes a
connection whose pipeline the server refused, and the pool replaces it.
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from outlast.errors import LeaseLost
from outlast.runtime.outcomes import store_failure
from outlast.store import Lease
from outlast.store.batcher import Statement
from outlast.store.group_commit import GroupCommit
from outlast.store.pg_pool import make_pool
from outlast.store.postgres import PostgresStore
from tests.util import new_run

pytestmark = pytest.mark.postgres

QUERY = "SELECT %s::int + 1"


def test_a_statement_the_connection_misjudged_is_a_store_failure() -> None:
    """What the misjudgement raises is the database's failure, not the graph's: a run
    meeting it is requeued, not failed. (Whether psycopg misjudges depends on when the
    aborted pipeline's results come back to it: a test of the library's behaviour itself
    failed once in a loaded run, so the behaviour is described above, not asserted.)"""
    missing = psycopg.errors.InvalidSqlStatementName('prepared statement "_pg3_0" does not exist')
    assert store_failure(missing)


async def test_a_refused_fence_leaves_the_group_commits_connection_usable(
    pg: PostgresStore, pg_url: str
) -> None:
    for _ in range(2):
        await pg.create_run(new_run())
    (held, other) = await pg.claim("w1", 30, 2)
    lease = Lease(held.id, "w1", held.lease_epoch)
    stale = Lease(other.id, "w1", other.lease_epoch + 1)  # an epoch not held
    pool = make_pool(pg_url, min_size=1, max_size=1)  # one connection: the same one again
    await pool.open()
    group = GroupCommit(pool, lambda lease, lent: ("SELECT 1", {}))
    try:
        write = [Statement(QUERY, (1,))]
        for _ in range(4):
            await group.write(lease, write)
        # pending together, they share a pipeline, which the stale lease's fence aborts
        # before the 5th and 6th uses of QUERY (the isolated retry then commits one)
        outcomes = await asyncio.gather(
            group.write(stale, write), group.write(lease, write), return_exceptions=True
        )
        assert isinstance(outcomes[0], LeaseLost) and outcomes[1] is None
        for _ in range(3):
            await group.write(lease, write)  # "does not exist" here without the fix
    finally:
        await group.close()
        await pool.close()
