"""Helpers shared by tests."""

from __future__ import annotations

import uuid
from typing import Any

from outlast.runtime.accept import fingerprint
from outlast.store import NewRun


def new_run(
    *,
    graph: str = "steps",
    input: Any = None,
    thread_id: str | None = None,
    key: str | None = None,
    max_attempts: int = 3,
    config: dict[str, Any] | None = None,
) -> NewRun:
    body = {"graph": graph, "input": input or {"n": 1}, "config": config or {}}
    return NewRun(
        id=str(uuid.uuid4()),
        thread_id=thread_id or str(uuid.uuid4()),
        graph=graph,
        input=body["input"],
        config=config or {},
        metadata={},
        budget=None,
        idempotency_key=key,
        fingerprint=fingerprint(body),
        max_attempts=max_attempts,
    )
