"""Eager start: a run accepted by a process whose worker could take it starts there.

The path of a run through the queue is: the acceptance commits and sends ``NOTIFY``,
the listener wakes the claim loops, one claims it in a second transaction, then it
starts. For one run at a time on an idle server that hop is a tenth of the run's
latency (``bench/phases.py``). Like Temporal's eager workflow start, acceptance asks the
worker in its own process for a slot first; with one, the store claims the new run in
the acceptance transaction itself (``RunStore.create_run`` with ``claim_for``), under the
thread's lock and the claim's rules, and the worker starts it at once.

The queue's order is kept: the worker offers a slot only when its last claim took all
there was and no ``NOTIFY`` came since, so a run accepted behind queued ones queues
too. Nothing is lost if the process dies between the commit and the start: the run is
``running`` under a lease nobody renews, and the reaper requeues it like any run of a
dead worker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import TypeVar

from outlast.runtime.worker import Worker
from outlast.store import NewRun, Run

T = TypeVar("T")


async def accept(
    worker: Worker | None,
    new: NewRun,
    create: Callable[[NewRun], Awaitable[T]],
    created_run: Callable[[T], Run | None],
) -> T:
    """``create(new)``, with ``new`` claimed for this process's worker when it has a slot
    for it now; the claimed run is handed to the worker before this returns.
    ``created_run`` picks the run out of what ``create`` returned, None when it created
    none (an idempotent replay, which starts nothing)."""
    claimant = worker.reserve() if worker is not None and _may_start_now(new) else None
    if worker is None or claimant is None:
        return await create(new)
    run: Run | None = None
    try:
        result = await create(dataclasses.replace(new, claim_for=claimant))
        run = created_run(result)
        return result
    finally:
        worker.adopt(run)


def first_created(result: tuple[Run, bool]) -> Run | None:
    """``created_run`` for the stores' ``(run, created)``."""
    run, created = result
    return run if created else None


def _may_start_now(new: NewRun) -> bool:
    """A run delayed by ``after_seconds`` would only park on its timer: it queues."""
    return new.options is None or not new.options.get("not_before")
