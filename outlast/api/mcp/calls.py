"""A tool call as a durable run: started through the run service, followed from the store.

``start`` accepts the run with an idempotency key, so a call that reaches the server
twice starts one run: the client's own key when it gives one (``_meta`` key
``outlast/idempotency_key``: it survives a new session and a server restart, for a
client that retries a call whose connection was lost), else one derived from the MCP
session and the JSON-RPC request id (a request delivered twice on one session).

``follow`` waits for the run as it stands in the store (woken by its events, re-read at
least every second), sends ``notifications/progress`` for its nodes when the client
asked with a ``progressToken``, asks a person through elicitation when the run waits
for one (``asking.py``), and returns the run's output, or what it waits for. Nothing of
the call lives only in the process: a call whose connection or server dies leaves its
run going; ``outlast_result``, ``tasks/result`` or the same call with its key again
finds it.

A cancelled request (``notifications/cancelled``) cancels its run (``Inflight``); a
dropped connection does not: the run is durable, and the client may come back for it.
"""

from __future__ import annotations

import time
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from outlast.api.context import AppContext
from outlast.api.edge import checked_key
from outlast.api.mcp import asking
from outlast.api.mcp.results import tool_result
from outlast.api.mcp.targets import Target, with_assistant
from outlast.api.native import run_request
from outlast.api.schemas import RunCreate
from outlast.errors import Fault, LimitReached, OutlastError, RunNotFound, fault_of
from outlast.service.handle import RunHandle, Verb
from outlast.store import Run
from outlast.store.hub import EVENTS
from outlast.vocabulary import EventType

KEY_META = "outlast/idempotency_key"
THREAD_META = "outlast/thread_id"
CONFIG_META = "outlast/config"  # the run's config (configurable, ...): MCP has no field for it
SESSION_HEADER = "mcp-session-id"
MARK = "mcp"  # the run metadata that says it was started through MCP (tasks/list)


def refused(exc: OutlastError) -> MCPError:
    """A refusal of the run service as an MCP error (the one rule, ``errors.fault_of``):
    the caller's fault (not found included) is invalid params; an outage or a limit an
    internal error whose data says the call may be retried, and when."""
    fault = fault_of(exc)
    if fault is Fault.RETRY:
        data = {"retryable": True, "status": exc.status}
        if isinstance(exc, LimitReached):
            data["retry_after"] = exc.retry_after
        return MCPError(types.INTERNAL_ERROR, f"{exc.title}: {exc}", data)
    code = types.INTERNAL_ERROR if fault is Fault.INTERNAL else types.INVALID_PARAMS
    return MCPError(code, f"{exc.title}: {exc}")


def session_of(mcp: ServerRequestContext[Any, Any]) -> str:
    request = mcp.request
    found = request.headers.get(SESSION_HEADER) if request is not None else None
    return str(found or "-")


def _meta_value(mcp: ServerRequestContext[Any, Any], name: str, kind: type = str) -> Any:
    meta = (mcp.params or {}).get("_meta")
    value = meta.get(name) if isinstance(meta, dict) else None
    if value is not None and not isinstance(value, kind):
        what = "a string" if kind is str else "an object"
        raise MCPError(types.INVALID_PARAMS, f"_meta.{name} must be {what}")
    return value


def call_key(mcp: ServerRequestContext[Any, Any]) -> str:
    try:
        own = checked_key(_meta_value(mcp, KEY_META))
    except OutlastError as exc:
        raise MCPError(types.INVALID_PARAMS, f"_meta.{KEY_META}: 1–255 visible ASCII") from exc
    if own is not None:
        return f"mcp:{own}"
    return f"mcp:{session_of(mcp)}:{mcp.request_id}"


async def start(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], target: Target, arguments: Any
) -> tuple[Run, str]:
    """The call's run (a new one, or the one its key started before) and its key."""
    key = call_key(mcp)
    try:  # checked as /v1 checks a run (sizes, ids, config), with the same words
        body = RunCreate(
            graph=target.graph,
            input=arguments,
            thread_id=_meta_value(mcp, THREAD_META),
            config=_meta_value(mcp, CONFIG_META, dict),
            metadata={MARK: {"tool": target.name}},
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the call"
        raise MCPError(types.INVALID_PARAMS, f"{where}: {first['msg']}") from None
    request = with_assistant(run_request(body, target.graph, body.thread_id), target.assistant)
    try:
        if target.assistant is not None:  # assistants.read, not the search that listed it
            await ctx.assistants.runnable(target.assistant, target.name)
        made = await ctx.runs.accept(request, key=key)
    except OutlastError as exc:
        raise refused(exc) from None
    return made.run, key


async def handle_of(ctx: AppContext, run_id: str, verb: Verb = "read") -> RunHandle:
    try:
        return await ctx.runs.handle(run_id, verb)
    except OutlastError as exc:
        raise refused(exc) from None


async def follow(
    ctx: AppContext, mcp: ServerRequestContext[Any, Any], handle: RunHandle, key: str
) -> types.CallToolResult:
    """Wait for the run: its output, or, when nobody could answer its question, what it
    asks. Woken by each event of its log, which its progress notifications report."""
    progress = Progress(mcp)
    async for now in handle.states(EVENTS):
        await progress.send(ctx, now.run)
        if now.ended:
            return tool_result(now.run, now.waits)
        if now.asked and not await asking.ask(mcp, ctx.runs, now.run, now.asked, key):
            return tool_result(now.run, now.waits)
    raise refused(RunNotFound(f"no run {handle.id!r}"))


class Progress:
    """``notifications/progress`` from the run's log: one per node that finished (its
    progress the event's seq, so it only grows, also across a resumed attempt)."""

    def __init__(self, mcp: ServerRequestContext[Any, Any]) -> None:
        self.mcp = mcp
        self.wanted = mcp.meta is not None and mcp.meta.get("progress_token") is not None
        self.after = 0

    async def send(self, ctx: AppContext, run: Run) -> None:
        while self.wanted and self.after < run.last_seq:
            events = await ctx.store.read_events(run.id, self.after, 100)
            if not events:
                return
            for event in events:
                if event.type == EventType.NODE_UPDATED:
                    node = event.data.get("node")
                    await self.mcp.session.report_progress(event.seq, None, f"{node} finished")
            self.after = events[-1].seq


class Inflight:
    """The runs of the calls in progress in this process, by (MCP session, request id),
    for ``notifications/cancelled``. A call cancelled by its client leaves its entry
    (the notification may be read before or after the call stops) and the notification
    takes it; an entry nobody takes (the call's connection dropped) ages out."""

    AGE = 600.0

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], tuple[str, float]] = {}

    def add(self, session: str, request_id: Any, run_id: str) -> None:
        now = time.monotonic()
        for where, (_, since) in list(self._runs.items()):
            if now - since > self.AGE:
                del self._runs[where]
        self._runs[(session, str(request_id))] = (run_id, now)

    def done(self, session: str, request_id: Any) -> None:
        self._runs.pop((session, str(request_id)), None)

    def take(self, session: str, request_id: Any) -> str | None:
        found = self._runs.pop((session, str(request_id)), None)
        return found[0] if found else None


async def answer(
    ctx: AppContext, handle: RunHandle, arguments: dict[str, Any], key: str
) -> RunHandle:
    """``outlast_answer``: the answer to what the run asks (the wait named by
    ``wait_id``, or the one it asks), exactly once: a retry of the same call, whose key
    took the answer already, changes nothing."""
    wanted = arguments.get("wait_id")
    if wanted is not None and not isinstance(wanted, str):
        raise MCPError(types.INVALID_PARAMS, "wait_id must be a string")
    try:
        await handle.answer(arguments.get("answer"), source="mcp", key=key, wait_id=wanted)
    except OutlastError as exc:
        raise refused(exc) from None
    return handle
