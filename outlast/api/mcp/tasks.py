"""MCP tasks (protocol 2025-11-25): a long tool call as a task whose id is its run's id.

The ``mcp`` SDK (2.x) defines the task types but serves none of it: ``tasks/*`` are not
dispatched and ``tools/call``'s result is checked against ``CallToolResult``. So this
face serves them itself, on the SDK's own extension points: a ``Server.middleware``
answers a task-augmented ``tools/call`` (``params.task``) with a ``CreateTaskResult``
before the SDK's result check (``task_call``), and ``tasks/get``, ``tasks/result``,
``tasks/cancel`` and ``tasks/list`` are request handlers of their own.

Nothing of a task is kept in the process: its id is the run id, its status the run's
(``results.task_of``). After a restart the client's ``tasks/get`` and ``tasks/result``
read the run again; ``tasks/result`` waits for it as a blocking call does (progress,
elicitation for what it asks) and gives the call's result, with the task in its
``_meta``. ``tasks/cancel`` cancels the run.

Under an app's ``auth.py`` its ``threads`` handlers decide as on the other faces: a
task's run on a thread that ``read`` (get, result), ``update`` (cancel) or ``search``
(list) filters out is a task that does not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError

from outlast.api.context import AppContext
from outlast.api.mcp import calls
from outlast.api.mcp.results import related, task_of
from outlast.api.mcp.targets import target_of
from outlast.errors import Fault, OutlastError, fault_of
from outlast.service.handle import RunHandle, Verb, ended
from outlast.store import Run

TASKS_VERSION = "2025-11-25"  # the revision whose core has tasks (2026-07-28 moved them out)
LISTED = 50
CANCEL_WAIT = 10.0  # seconds a tasks/cancel waits for the run to end


def task_wire(run: Run, waits: list[Any]) -> dict[str, Any]:
    """A task as the wire has it: ``ttl`` is required, null for unlimited."""
    task = task_of(run, waits).model_dump(by_alias=True, mode="json", exclude_none=True)
    task["ttl"] = None
    return task


def wants_task(mcp: ServerRequestContext[Any, Any]) -> bool:
    params = mcp.params
    return (
        mcp.method == "tools/call"
        and mcp.protocol_version == TASKS_VERSION
        and isinstance(params, Mapping)
        and params.get("task") is not None
    )


async def task_call(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """A task-augmented ``tools/call``: the run accepted, its task returned at once."""
    params = types.CallToolRequestParams.model_validate(mcp.params, by_name=False)
    target = await target_of(ctx, params.name)
    run, _ = await calls.start(ctx, mcp, target, params.arguments or {})
    return {"task": task_wire(run, await ctx.runs.open_waits(run))}


async def _task(ctx: AppContext, task_id: str, verb: Verb = "read") -> RunHandle:
    """The caller's run, found by the run service for ``verb``: else not found."""
    try:
        return await ctx.runs.handle(task_id, verb)
    except OutlastError as exc:
        if fault_of(exc) is Fault.NOT_FOUND:
            raise MCPError(types.INVALID_PARAMS, f"Task not found: {task_id}") from None
        raise calls.refused(exc) from None


async def get(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
) -> dict[str, Any]:
    run = (await _task(ctx, params.task_id)).run
    return task_wire(run, await ctx.runs.open_waits(run))


async def result(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
) -> dict[str, Any]:
    handle = await _task(ctx, params.task_id)
    run = handle.run
    found = await calls.follow(ctx, mcp, handle, run.idempotency_key or f"mcp:task:{run.id}")
    payload = found.model_dump(by_alias=True, mode="json", exclude_none=True)
    payload["_meta"] = {**payload.get("_meta", {}), **related(run.id)}
    return payload


async def cancel(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
) -> dict[str, Any]:
    handle = await _task(ctx, params.task_id, "cancel")
    run = handle.run
    if run.terminal:
        raise MCPError(
            types.INVALID_PARAMS, f"Cannot cancel task: already {task_of(run, []).status}"
        )
    try:
        await handle.cancel("cancelled through MCP (tasks/cancel)")
    except OutlastError as exc:
        raise calls.refused(exc) from None
    # A running run ends at its next step; a short wait gives the cancelled task back.
    now = await handle.settle(ended, min(ctx.settings.result_wait_max, CANCEL_WAIT))
    if now is None:
        return task_wire(run, [])
    return task_wire(now.run, now.waits)


async def listed(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
) -> dict[str, Any]:
    page = await ctx.runs.page(limit=LISTED, keep=lambda r: calls.MARK in (r.metadata or {}))
    return {"tasks": [task_wire(r, page.of(r)) for r in page.runs]}
