"""Riding out a short database outage in place, while the run's lease may still be ours.

Why: a step whose checkpoint write fails on a restarting Postgres used to stop its run
(``store_failed``) and give it back to the queue, and the next attempt resumed from the
checkpoint before that step, so the step ran again: its node's own work twice (the
ledger keeps effects once, but a node's plain writes are at least once). The write that
failed is safe to send again instead, on a fresh connection, as long as nobody took the
run meanwhile:

- a checkpoint write is upserts (``aput``) and inserts that skip a row already there
  (``aput_writes``), all fenced by the lease: sent twice, it stores the same rows;
- an append of the run's events carries a token, which the store finds on the run when
  an append whose answer was lost did commit (``queries.sql`` ``append``);
- a lease that ran out while the database was down is not presumed dead at once: the
  reaper gives every lease a full ``worker_lease_ttl`` after the server's start
  (``run_lock_expired``), time for its holder to renew. A run another worker did take
  meanwhile refuses the retry at its fence (``LeaseLost``), which ends the riding out.

Bounded by ``PATIENCE``: a database gone for longer is not a restart, and the run is
given back as before (``runtime/giveback.py``); a cancel, a shutdown or a lost lease
cancel the wait at once (the graph's task is cancelled in its sleep).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg

from outlast.errors import LeaseLost, StoreUnavailable
from outlast.retry import RetryPolicy

log = logging.getLogger(__name__)

T = TypeVar("T")

# A restart of Postgres takes a few seconds (fast or immediate shutdown, crash recovery
# of a small WAL): well within this; a database away for longer is an outage the run is
# given back through.
PATIENCE = 30.0
# Soon at first (a connection that died with the server is replaced at once), then at
# most once a second per write, jittered so a process's runs do not all come back at once.
OUTAGE = RetryPolicy(initial_interval=0.05, maximum_interval=1.0, jitter=True)


def transient(exc: BaseException) -> bool:
    """An error of the database, not of the caller: connection lost, server restarting,
    pool exhausted, disk full, a connection's prepared statements out of step."""
    failures = (StoreUnavailable, psycopg.OperationalError, psycopg.InterfaceError)
    if isinstance(exc, failures):
        return True
    # a connection whose prepared statements the client misjudged (store/pg_pool.py's
    # pipeline()): the connection's fault, not the caller's; the next one is clean
    if isinstance(exc, psycopg.errors.InvalidSqlStatementName):
        return True
    return isinstance(exc, sqlite3.OperationalError) and any(
        words in str(exc) for words in ("disk", "locked", "I/O", "full")
    )


async def ride_out(
    write: Callable[[], Awaitable[T]],
    what: str,
    *,
    patience: float = PATIENCE,
    other_attempts: int = 1,
) -> T:
    """``write()``, sent again while the database fails it with a ``transient`` error,
    for ``patience`` seconds at most; any other error is tried ``other_attempts`` times
    in all. ``LeaseLost`` ends it at once: the run is someone else's. Only for writes
    that are harmless sent twice (see the module's docstring)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    attempt = 0
    while True:
        attempt += 1
        try:
            return await write()
        except LeaseLost:
            raise
        except Exception as exc:
            left = deadline - loop.time()
            outage = transient(exc)
            if (left <= 0) if outage else (attempt >= other_attempts):
                raise
            delay = OUTAGE.delay(attempt)
            if attempt == 1:  # once per outage and write: the rest would be noise
                log.warning("%s failed (%s); trying again for %.0f s", what, exc, left)
            await asyncio.sleep(min(delay, left) if outage else delay)
