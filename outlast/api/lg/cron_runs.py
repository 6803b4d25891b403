"""A cron tick's run: the run the cron's principal would get by posting the cron's run
request to ``/threads/{thread_id}/runs`` (or ``/runs``, stateless), accepted by the same
code (``accept.start``: the assistant, the thread, the multitask strategy, the run
service's limits and ``new_run``) under the tick's idempotency key, so that a tick fired
twice (its scheduler died before recording it) gets one run. The runtime's scheduler
(``runtime/scheduler.py``) is handed ``firer(...)`` by whoever wires the worker, since
the runtime cannot import a face.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from outlast.api.context import AppContext
from outlast.api.lg.accept import start
from outlast.api.lg.access import Unprocessable
from outlast.api.lg.cron_authz import tick_authz
from outlast.api.lg.schemas import RunCreate
from outlast.api.run_headers import RunHttp
from outlast.config import Settings
from outlast.graph.manifest import Manifest
from outlast.graph.registry import GraphRegistry
from outlast.runtime.scheduler import FireCron
from outlast.store import Store
from outlast.store.crons import Tick

# The fields of a cron's body that make its runs (its ``payload``); the assistant and the
# metadata are the cron's own.
RUN_FIELDS = frozenset(
    {
        "input",
        "config",
        "context",
        "stream_mode",
        "stream_subgraphs",
        "stream_resumable",
        "checkpoint_during",
        "durability",
        "interrupt_before",
        "interrupt_after",
        "multitask_strategy",
        "webhook",
        "feedback_keys",
    }
)


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
        raise Unprocessable(f"the cron's run request: {exc}") from None


def firer(store: Store, registry: GraphRegistry, settings: Settings) -> FireCron:
    """How this process's scheduler makes a tick's run (its LangGraph run id). No eager
    start: the run is queued and claimed as any other. langgraph.json's
    ``disable_webhooks`` holds for them too (a tick has no request headers)."""
    manifest = Manifest.read(settings.graphs_file)
    http = RunHttp.of_manifest(manifest)

    async def fire(tick: Tick) -> str:
        cron = tick.cron
        ctx = AppContext(
            store,
            registry,
            settings,
            None,
            principal=cron.principal,
            http=http,
            authz=tick_authz(cron, registry.app_auth),  # its creator's user, no handler asked
        )
        metadata = {**cron.metadata, "cron_id": cron.cron_id}
        body = run_request(cron.assistant_id, cron.payload, metadata, cron.on_run_completed)
        return (await start(ctx, cron.thread_id, body, tick.key)).lg.id

    return fire
