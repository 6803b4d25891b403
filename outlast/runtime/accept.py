"""Accepting a run: the identity exists before any work starts.

``new_run`` is what the run service calls for every face (``service/runs.py``): it
resolves the graph name against the configured graphs (never importing anything named by
the request), fingerprints the request for the idempotency check and gives the run its
ids, writing nothing. The service then checks its limits and hands the ``NewRun`` to the
store, which writes the run row and its first event in one
transaction.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

from outlast.errors import UnknownGraph
from outlast.store import NewRun


def fingerprint(body: dict[str, Any]) -> str:
    """A stable hash of what the client asked for: key order and spacing do not matter."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RunRequest:
    """A run as a client asked for it, in the terms both faces share."""

    graph: str | None
    input: Any
    thread_id: str | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None
    model: str | None = None  # resolved at acceptance, so every worker uses the same
    options: dict[str, Any] | None = None  # LangGraph's run options (runtime/options.py)


def new_run(
    request: RunRequest,
    *,
    graphs: list[str],
    max_attempts: int,
    idempotency_key: str | None = None,
    principal: str = "",
) -> NewRun:
    """Resolve the graph and fingerprint the request; nothing is written yet."""
    if not graphs:
        raise UnknownGraph("no graphs are configured")
    graph = request.graph or graphs[0]
    if graph not in graphs:
        raise UnknownGraph(f"unknown graph {graph!r}; configured graphs: {', '.join(graphs)}")
    # The fingerprint covers what the client sent (after defaults are applied), not the
    # ids we generate, so a retry with the same body matches.
    body = {
        "graph": graph,
        "input": request.input,
        "thread_id": request.thread_id,
        "config": request.config or {},
        "metadata": request.metadata or {},
        "budget": request.budget,
    }
    if request.options:
        body["options"] = request.options
    config = dict(request.config or {})
    if request.model is not None:
        configurable = dict(config.get("configurable") or {})
        configurable.setdefault("model", request.model)
        config["configurable"] = configurable
    return NewRun(
        id=str(uuid.uuid4()),
        thread_id=request.thread_id or str(uuid.uuid4()),
        graph=graph,
        input=request.input,
        config=config,
        metadata=request.metadata or {},
        budget=request.budget,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint(body),
        max_attempts=max_attempts,
        principal=principal,
        options=request.options or None,
    )
