"""What a request must pass before it changes anything, whatever face it came through:
sizes, the principal's limits, and a run request completed with what the operator
decides (the budget's defaults and caps, the model a graph will call).

Checked here once, so the faces cannot drift: an idempotency key means the same, a limit
refuses the same request on every face (the A2A face once answered a wait without the
size check the others made).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from outlast.config import Settings
from outlast.errors import LimitReached, TooLarge
from outlast.graph.registry import GraphRegistry
from outlast.runtime.accept import RunRequest
from outlast.runtime.budget import resolve_budget
from outlast.store import Store


def check_size(value: Any, max_bytes: int, what: str, limit: str) -> None:
    """``value`` as JSON within ``max_bytes`` (``limit``: the setting that says so)."""
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    if size > max_bytes:
        raise TooLarge(
            f"{what} is {size} bytes; the limit is {max_bytes} (OUTLAST_{limit.upper()})", limit
        )


async def admit(store: Store, settings: Settings, principal: str, key: str | None) -> None:
    """Refuse a new run past the principal's runs in flight (whose thread it may use is
    the owner rule's, ``service/owners.py``). A retried request (same idempotency key) is
    let through, so it gets its run back even at the limit."""
    cap = settings.max_runs_in_flight
    if cap and await store.count_active(principal) >= cap:
        if key is not None and await store.get_run_by_key(principal, key) is not None:
            return
        raise LimitReached(
            f"{cap} runs in flight (queued or running) already; wait for some to finish "
            "(OUTLAST_MAX_RUNS_IN_FLIGHT)",
            "max_runs_in_flight",
        )


def completed(request: RunRequest, settings: Settings, registry: GraphRegistry) -> RunRequest:
    """The request as the runtime takes it: its input within the size limit, the budget
    resolved against the defaults and bounded by the operator's caps (a face that names
    none gets the defaults), and the model (for graphs that call one) resolved and
    checked now, so every worker uses the model the run was accepted with."""
    check_size(request.input, settings.max_input_bytes, "input", "max_input_bytes")
    budget = resolve_budget(request.budget, settings.budget_defaults, settings.budget_caps)
    name = request.graph or (registry.names[0] if registry.names else None)
    model = None
    if name in registry.names:  # an unknown name is refused by new_run
        model = registry.model_for(name, request.config)
    return dataclasses.replace(request, budget=budget, model=model)
