"""A2A 1.0 requests on outlast runs: the SDK's ``RequestHandler``, answered from the store.

Not the SDK's ``DefaultRequestHandler``: it runs an ``AgentExecutor`` inside the request's
process and keeps live tasks in memory, so after a restart a task it was running can be
neither followed nor cancelled. Here a task *is* a run (``tasks.py``): a message starts
one through the same acceptance as ``/v1`` (limits, principal, eager start), with the
message id as its ``Idempotency-Key`` (a retried send is the same task); a follow-up on an
``input-required`` or ``auth-required`` task answers its wait through the same
exactly-once update as ``POST /v1/runs/{id}/input``, keyed by the message id too; get,
cancel and subscribe read and change the run. Nothing lives in the process, so a task
survives a restart and a subscription reads the store again. The SDK's JSON-RPC layer
(routes, parsing, error codes) is used as it is (``routes.py``).
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from a2a.helpers import get_data_parts, get_message_text
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InternalError,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
    UnsupportedOperationError,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError

from outlast.api.a2a import push
from outlast.api.a2a.tasks import FINAL, INTERRUPTED, task_of
from outlast.api.context import AppContext
from outlast.api.native import run_request
from outlast.api.schemas import RunCreate
from outlast.errors import Fault, LimitReached, OutlastError, WaitNotOpen, fault_of
from outlast.store import Run, Wait
from outlast.store.hub import STATUS, wait_for

_CONTEXT = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
CTX = "outlast.ctx"  # ServerCallContext.state: the request's AppContext (routes.py)
GRAPH = "outlast.graph"


class OutlastHandler(RequestHandler):
    # -- reads -------------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        ctx = _ctx(context)
        run = await self._run(ctx, params.id, context.state[GRAPH])
        return task_of(run, await _waits(ctx, run))

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        ctx = _ctx(context)
        thread = params.context_id or None
        # a context is a thread, which an app's auth.py may share; without one, the
        # caller's own tasks
        who = ctx.runs.owners.scope if thread else ctx.principal
        runs = await ctx.store.list_runs(
            thread_id=thread, status=None, limit=50, before=None, principal=who
        )
        mine = [
            r
            for r in runs
            if r.graph == context.state[GRAPH] and await ctx.runs.admits(r.thread_id, "search", {})
        ]
        waits = await ctx.store.open_waits([r.id for r in mine])
        tasks = [task_of(r, waits.get(r.id, [])) for r in mine]
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    # -- messages ----------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        ctx = _ctx(context)
        run = await self._accept(ctx, params.message, context.state[GRAPH])
        if params.configuration.return_immediately:
            return task_of(run, await _waits(ctx, run))
        run, waits = await _settled(ctx, run.id, ctx.settings.result_wait_max)
        return task_of(run, waits)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        ctx = _ctx(context)
        run = await self._accept(ctx, params.message, context.state[GRAPH])
        async for event in _follow(ctx, run):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Any]:
        ctx = _ctx(context)
        run = await self._run(ctx, params.id, context.state[GRAPH])
        if run.terminal:
            raise UnsupportedOperationError(
                message=f"Task {run.id} is in terminal state: {run.status.value}"
            )
        async for event in _follow(ctx, run):
            yield event

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        ctx = _ctx(context)
        run = await self._run(ctx, params.id, context.state[GRAPH], "update")
        if run.terminal:
            raise TaskNotCancelableError(message=f"Task {run.id} is {run.status.value}")
        await ctx.runs.cancel(run, "canceled through A2A")
        run, waits = await _settled(ctx, run.id, ctx.settings.result_wait_max, final_only=True)
        return task_of(run, waits)

    # -- push notifications, through the outbox (push.py) -------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        ctx = _ctx(context)
        run = await self._run(ctx, params.task_id, context.state[GRAPH])
        made: TaskPushNotificationConfig = await push.create(ctx, run, params)
        return made

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        ctx = _ctx(context)
        run = await self._run(ctx, params.task_id, context.state[GRAPH])
        return await push.get(ctx, run, params.id)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        ctx = _ctx(context)
        run = await self._run(ctx, params.task_id, context.state[GRAPH])
        return ListTaskPushNotificationConfigsResponse(configs=await push.listed(ctx, run))

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        ctx = _ctx(context)
        run = await self._run(ctx, params.task_id, context.state[GRAPH])
        await push.get(ctx, run, params.id)  # an unknown config is an error, as in the SDK
        await push.delete(ctx, run, params.id)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError(message="no extended agent card")

    # -- the run behind a task ---------------------------------------------------------

    async def _run(self, ctx: AppContext, task_id: str, graph: str, action: str = "read") -> Run:
        """The caller's run of this endpoint's graph (any other is no task here, nor one
        on a context the app's ``threads`` handler filters out for ``action``)."""
        try:
            uuid.UUID(task_id)
        except ValueError:
            raise TaskNotFoundError(message=f"Task {task_id} not found") from None
        try:
            run = await ctx.store.get_run(task_id)
        except OutlastError as exc:  # an outage is no "not found"
            raise refusal(exc) from None
        if run is None or run.graph != graph or not await ctx.runs.owners.run(run, action):
            raise TaskNotFoundError(message=f"Task {task_id} not found")
        return run

    async def _accept(self, ctx: AppContext, message: Message, graph: str) -> Run:
        if not message.message_id:
            raise InvalidParamsError(message="message.messageId is required")
        if message.task_id:
            return await self._answer(ctx, message, graph)
        if message.context_id and not _CONTEXT.match(message.context_id):
            raise InvalidParamsError(message="contextId: 1 to 200 of A-Z a-z 0-9 _ . : -")
        try:
            body = RunCreate(
                graph=graph,
                input=_input(message),
                thread_id=message.context_id or None,
                config=_config(message),
            )
        except ValidationError as exc:
            raise InvalidParamsError(message=f"the run: {exc.errors()[0]['msg']}") from None
        try:
            made = await ctx.runs.accept(
                run_request(body, graph, body.thread_id), key=f"a2a:{message.message_id}"
            )
        except OutlastError as exc:
            raise refusal(exc) from None
        return made.run

    async def _answer(self, ctx: AppContext, message: Message, graph: str) -> Run:
        """A follow-up: the answer to what the task asks, exactly once. The message id is
        the answer's key: the same message again is recognised, and changes nothing."""
        run = await self._run(ctx, message.task_id, graph, "create_run")
        if message.context_id and message.context_id != run.thread_id:
            raise InvalidParamsError(message=f"contextId is not task {run.id}'s")
        key = f"a2a:{message.message_id}"
        if any(w.answer_key == key for w in await ctx.store.list_waits(run.id)):
            return run  # a retry of the follow-up that was taken: the task as it is now
        if run.terminal:
            raise UnsupportedOperationError(
                message=f"Task {run.id} is in terminal state: {run.status.value}"
            )
        waits = await ctx.runs.asking(run)
        if not waits:
            raise UnsupportedOperationError(
                message=f"Task {run.id} asks for nothing now: it is {run.status.value}"
            )
        if len(waits) > 1:
            raise UnsupportedOperationError(
                message=f"Task {run.id} asks {len(waits)} things at once; answer them through "
                "POST /v1/runs/{id}/input, one wait at a time"
            )
        try:
            run, _ = await ctx.runs.answer(
                run, waits[0].id, _answer_value(message), source="a2a", key=key
            )
        except WaitNotOpen as exc:
            raise UnsupportedOperationError(message=str(exc)) from None
        except OutlastError as exc:  # the answer's size or shape, or an outage
            raise refusal(exc) from None
        return run


def refusal(exc: OutlastError) -> A2AError:
    """The run service's refusal in A2A's words (the one rule, ``errors.fault_of``): an
    outage or a limit is an internal error whose data says the call may be retried."""
    message = f"{exc.title}: {exc}"
    fault = fault_of(exc)
    if fault is Fault.RETRY:
        data: dict[str, Any] = {"retryable": True, "status": exc.status}
        if isinstance(exc, LimitReached):
            data["retry_after"] = exc.retry_after
        return InternalError(message=message, data=data)
    if fault is Fault.NOT_FOUND:
        return TaskNotFoundError(message=message)
    return InvalidParamsError(message=message) if fault is Fault.INVALID else InternalError(message)


def _ctx(context: ServerCallContext) -> AppContext:
    ctx: AppContext = context.state[CTX]
    return ctx


def _input(message: Message) -> Any:
    """A data part is the graph's input as it is; text becomes a user message."""
    data = [d for d in get_data_parts(message.parts) if isinstance(d, dict)]
    if data:
        return data[0]
    return {"messages": [{"role": "user", "content": get_message_text(message)}]}


def _config(message: Message) -> Any:
    """The run's config, from the message's ``metadata.config`` (A2A has no field of its
    own for it; the graph's options, such as ``configurable``, go there)."""
    if "config" not in message.metadata:
        return None
    config = MessageToDict(message.metadata).get("config")
    if not isinstance(config, dict):
        raise InvalidParamsError(message="metadata.config must be an object")
    return config


def _answer_value(message: Message) -> Any:
    data = get_data_parts(message.parts)
    return data[0] if data else get_message_text(message)


async def _waits(ctx: AppContext, run: Run) -> list[Wait]:
    return await ctx.runs.open_waits(run)


async def _settled(
    ctx: AppContext, run_id: str, at_most: float, *, final_only: bool = False
) -> tuple[Run, list[Wait]]:
    """The run once its task is final (or, unless ``final_only``, interrupted), or as it
    is after ``at_most`` seconds (a client keeps following with GetTask or subscribe)."""
    deadline = asyncio.get_running_loop().time() + at_most
    async for run, waits in _states(ctx, run_id):
        state = task_of(run, waits).status.state
        done = state in FINAL or (not final_only and state in INTERRUPTED)
        if done or asyncio.get_running_loop().time() >= deadline:
            return run, waits
    raise AssertionError("unreachable: _states never ends")  # pragma: no cover


async def _states(ctx: AppContext, run_id: str) -> AsyncIterator[tuple[Run, list[Wait]]]:
    """The run now, then again at each status notification (at least every second: not
    every transition notifies)."""
    with ctx.store.hub.watch(STATUS, run_id) as changed:
        while True:
            changed.clear()
            run = await ctx.store.get_run(run_id)
            if run is None:
                raise TaskNotFoundError(message=f"Task {run_id} not found")
            yield run, await _waits(ctx, run)
            await wait_for(changed, 1.0)


async def _follow(ctx: AppContext, run: Run) -> AsyncGenerator[Any]:
    """The task, then a status update at each change of its state, up to its end or its
    next question; read from the store, so it is the same after a restart."""
    last: int | None = None
    async for found, waits in _states(ctx, run.id):
        task = task_of(found, waits)
        state = task.status.state
        if last is None:
            yield task
        elif state != last:
            for artifact in task.artifacts:
                yield TaskArtifactUpdateEvent(
                    task_id=task.id, context_id=task.context_id, artifact=artifact
                )
            yield TaskStatusUpdateEvent(
                task_id=task.id, context_id=task.context_id, status=task.status
            )
        last = state
        if state in FINAL or state in INTERRUPTED:
            return
