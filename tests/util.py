"""Helpers shared by tests."""

from __future__ import annotations

import uuid
from typing import Any

from outlast.runtime.accept import RunRequest, fingerprint
from outlast.runtime.accept import new_run as accepted_run
from outlast.store import NewRun, Run, Store


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


async def accept(
    store: Store,
    request: RunRequest,
    *,
    graphs: list[str],
    max_attempts: int,
    idempotency_key: str | None = None,
) -> tuple[Run, bool]:
    """A run in the store as the API would accept it (``new_run``, then the store), without
    HTTP and without the API's limits: for tests that drive a worker directly."""
    new = accepted_run(
        request, graphs=graphs, max_attempts=max_attempts, idempotency_key=idempotency_key
    )
    return await store.create_run(new)
