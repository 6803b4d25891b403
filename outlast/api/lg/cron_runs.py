"""A cron tick's run: the run the cron's principal would get by posting the cron's run
request to ``/threads/{thread_id}/runs`` (or ``/runs``, stateless), accepted by the same
code (``accept.start``: the assistant, the thread, the multitask strategy, the run
service's limits and ``new_run``) under the tick's idempotency key, so that a tick fired
twice (its scheduler died before recording it) gets one run. The runtime's scheduler
(``runtime/scheduler.py``) is handed ``firer(...)`` by whoever wires the worker, since
the runtime cannot import a face; which run a tick makes, and as whom, is the cron
service's (``CronService.fire``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from outlast.api.context import AppContext
from outlast.api.lg.accept import start
from outlast.api.lg.schemas import RunCreate
from outlast.api.run_headers import RunHttp
from outlast.config import Settings
from outlast.errors import UnprocessableRequest
from outlast.graph.manifest import Manifest
from outlast.graph.registry import GraphRegistry
from outlast.runtime.scheduler import FireCron
from outlast.service.crons import CronService, TickRun
from outlast.store import Store


def run_request(
    assistant_id: str,
    payload: Mapping[str, Any],
    metadata: Mapping[str, Any],
    on_completion: str | None = None,
) -> RunCreate:
    """The body of the run a cron makes."""
    body: dict[str, Any] = {**payload, "assistant_id": assistant_id, "metadata": dict(metadata)}
    if on_completion is not None:
        body["on_completion"] = on_completion
    try:
        return RunCreate.model_validate(body)
    except ValidationError as exc:
        raise UnprocessableRequest(f"the cron's run request: {exc}") from None


def firer(store: Store, registry: GraphRegistry, settings: Settings) -> FireCron:
    """How this process's scheduler makes a tick's run (its LangGraph run id): the cron
    service says which run, as whom (``CronService.fire``), and the face's acceptance
    makes it. No eager start: the run is queued and claimed as any other.
    langgraph.json's ``disable_webhooks`` holds for them too (a tick has no request
    headers)."""
    manifest = Manifest.read(settings.graphs_file)
    http = RunHttp.of_manifest(manifest)

    async def make(run: TickRun) -> str:
        ctx = AppContext(
            store,
            registry,
            settings,
            None,
            principal=run.principal,
            http=http,
            authz=run.authz,  # its creator's user, no handler asked
        )
        body = run_request(run.assistant_id, run.payload, run.metadata, run.on_completion)
        return (await start(ctx, run.thread_id, body, run.key)).lg.id

    return functools.partial(CronService(store, registry).fire, make=make)
