"""LangGraph's per-run ``webhook``: one POST when the LangGraph run ends, with the run.

A LangGraph run ends where outlast's run completes, fails, is cancelled, or stops to ask
a client something (an interrupt: the LangGraph run is then ``success`` and its thread
``interrupted``; a timer or a provider's job is not an end). So the run is created with
a subscription to those events of its own, ``once``: the first one is the LangGraph
run's end, and a resume is a new LangGraph run with a subscription of its own. The body
is the run as ``GET /threads/{t}/runs/{r}`` shows it, with ``values`` (the output, for
a run that completed), ``error`` and ``webhook_sent_at``; LangGraph sends no signature,
so neither is one sent here (the delivery has ``webhook-id`` and ``webhook-timestamp``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from outlast.api.lg.views import error_of, run_json
from outlast.config import Settings
from outlast.service.launch import WEBHOOK_FORMAT as FORMAT
from outlast.store.outbox import Claimed
from outlast.vocabulary import EventType
from outlast.webhooks.bodies import BodyStore

# The subscription a run is made with is the run service's (service/launch.py).
__all__ = ["FORMAT", "body"]

_STATUS = {
    EventType.RUN_WAITING: "success",
    EventType.RUN_COMPLETED: "success",
    EventType.RUN_FAILED: "error",
    EventType.RUN_CANCELLED: "interrupted",
}


async def body(store: BodyStore, claimed: Claimed, settings: Settings) -> Any:
    del settings
    delivery = claimed.delivery
    lg = await store.lg_get_run(str(claimed.webhook.extra.get("lg_run_id", "")))
    run = await store.get_run(delivery.run_id)
    if lg is None or run is None:
        raise LookupError(f"the run of delivery {delivery.id} is gone")
    status = _STATUS.get(EventType(delivery.type), "success")
    if status == "interrupted" and (run.error or {}).get("type") == "superseded":
        status = "success"  # new input replaced its pause: it had ended at its interrupt
    out = run_json(lg, run, status)
    out["values"] = run.result if delivery.type == EventType.RUN_COMPLETED else None
    out["error"] = error_of(run.error) if status == "error" else None
    out["webhook_sent_at"] = dt.datetime.now(dt.UTC).isoformat()
    return out
