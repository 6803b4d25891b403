"""A run its store failed under goes back to the queue as soon as the store answers.

When the database fails under a run (a full disk, Postgres restarting), the execution
stops without writing: it cannot write. Left there, the run waits for its lease to run
out and the reaper to requeue it, and a reaped run has spent an attempt (unless it saved
a step since its claim: ``store/transitions.py:reap``); a run that met
three full-disk episodes ended ``failed`` with ``worker_lost`` though no worker was ever
lost (the nemesis, ``bench/full_disk_episodes.py``). An outage is the infrastructure's
failure, not the run's, so it should cost no attempt, as a drain costs none.

So the worker keeps the run's lease (its heartbeat goes on naming the run, and renews it
once the store is back) and gives the run back with a release, the attempt returned, as
soon as the store takes a write. The reaper never sees it expire unless the outage
outlasts the lease for this worker alone: a worker cut off from a database that others
reach is, from outside, a dead one, and its runs are reaped as such.

The cost of this choice: a run whose own writes fill the disk is no longer stopped by
``max_attempts``; it goes back and fills the disk again, with the store's ``StoreFull``
answers (503) showing the operator what happens.
"""

from __future__ import annotations

import asyncio
import logging

from outlast.errors import LeaseLost
from outlast.retry import Backoff, RetryPolicy
from outlast.runtime.outcomes import STORE_FAILED, ExecutionStore, store_failure
from outlast.store import Lease

log = logging.getLogger(__name__)

# Short waits: the store's return is noticed within 2 s, well inside any lease.
RETRY = RetryPolicy(initial_interval=0.2, maximum_interval=2.0, jitter=True)


async def give_back(store: ExecutionStore, lease: Lease, stopping: asyncio.Event) -> bool:
    """Release the run (``run.released``, reason ``store_failed``, its attempt not
    counted) once the store takes the write; True if it did. False when the lease was
    lost meanwhile (reaped, or the run cancelled and ended elsewhere) or the worker is
    stopping: then the lease runs out and the reaper has the run."""
    backoff = Backoff(RETRY)
    while not stopping.is_set():
        try:
            await store.release(lease, STORE_FAILED)
            return True
        except LeaseLost:
            return False
        except Exception as exc:
            if not store_failure(exc):
                raise
            log.debug("run %s: not given back yet (%s)", lease.run_id, exc)
        await asyncio.sleep(backoff.next())
    return False
