"""The claim latency metric: how long a claimed run waited in the queue."""

from __future__ import annotations

import logging

from outlast.runtime import metrics
from outlast.store import EventStore, Run

log = logging.getLogger(__name__)


async def observe_claim(store: EventStore, run: Run) -> None:
    """Claim latency, on database time: the claim set ``updated_at`` to now, so when
    the run became queued comes from elsewhere. A first claim was queued at acceptance;
    a later one by the event just before ``run.started`` (``run.queued``,
    ``run.released``, ``run.requeued``), unless retention pruned it."""
    queued_at = run.created_at
    if run.has_history:
        try:
            before = await store.read_events(run.id, run.last_seq - 2, 1)
        except Exception as exc:  # a metric never stops a run
            log.debug("run %s: no claim latency: %s", run.id, exc)
            return
        if not before or before[0].seq != run.last_seq - 1:
            return
        queued_at = before[0].time
    metrics.CLAIM_LATENCY.observe(max(0.0, (run.updated_at - queued_at).total_seconds()))
