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

import re
from collections.abc import AsyncGenerator
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
from outlast.api.a2a.tasks import task_of
from outlast.api.context import AppContext
from outlast.api.native import run_request
from outlast.api.schemas import RunCreate
from outlast.errors import (
    Fault,
    LimitReached,
    NothingToResume,
    OutlastError,
    WaitNotOpen,
    WhichWait,
    fault_of,
)
from outlast.service.handle import RunHandle, Until, Verb, ended, needs_a_client
from outlast.store import Run

_CONTEXT = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
CTX = "outlast.ctx"  # ServerCallContext.state: the request's AppContext (routes.py)
GRAPH = "outlast.graph"


class OutlastHandler(RequestHandler):
    # -- reads -------------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        ctx = _ctx(context)
        handle = await _task(ctx, params.id, context.state[GRAPH])
        return task_of(handle.run, await ctx.runs.open_waits(handle.run))

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        ctx = _ctx(context)
        graph = context.state[GRAPH]
        # a context is a thread, which an app's auth.py may share; without one, the
        # caller's own tasks
        page = await ctx.runs.page(
            thread_id=params.context_id or None, limit=50, keep=lambda r: r.graph == graph
        )
        tasks = [task_of(r, page.of(r)) for r in page.runs]
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    # -- messages ----------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        ctx = _ctx(context)
        run = await self._accept(ctx, params.message, context.state[GRAPH])
        if params.configuration.return_immediately:
            return task_of(run, await ctx.runs.open_waits(run))
        return await _settled(ctx, run, needs_a_client)

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
        run = (await _task(ctx, params.id, context.state[GRAPH])).run
        if run.terminal:
            raise UnsupportedOperationError(
                message=f"Task {run.id} is in terminal state: {run.status.value}"
            )
        async for event in _follow(ctx, run):
            yield event

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        ctx = _ctx(context)
        handle = await _task(ctx, params.id, context.state[GRAPH], "cancel")
        run = handle.run
        if run.terminal:
            raise TaskNotCancelableError(message=f"Task {run.id} is {run.status.value}")
        try:
            await handle.cancel("canceled through A2A")
        except OutlastError as exc:
            raise refusal(exc) from None
        return await _settled(ctx, run, ended)

    # -- push notifications, through the outbox (push.py) -------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        ctx = _ctx(context)
        run = (await _task(ctx, params.task_id, context.state[GRAPH])).run
        made: TaskPushNotificationConfig = await push.create(ctx, run, params)
        return made

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        ctx = _ctx(context)
        run = (await _task(ctx, params.task_id, context.state[GRAPH])).run
        return await push.get(ctx, run, params.id)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        ctx = _ctx(context)
        run = (await _task(ctx, params.task_id, context.state[GRAPH])).run
        return ListTaskPushNotificationConfigsResponse(configs=await push.listed(ctx, run))

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        ctx = _ctx(context)
        run = (await _task(ctx, params.task_id, context.state[GRAPH])).run
        await push.get(ctx, run, params.id)  # an unknown config is an error, as in the SDK
        await push.delete(ctx, run, params.id)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError(message="no extended agent card")

    # -- the run behind a task ---------------------------------------------------------

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
        handle = await _task(ctx, message.task_id, graph, "answer")
        run = handle.run
        if message.context_id and message.context_id != run.thread_id:
            raise InvalidParamsError(message=f"contextId is not task {run.id}'s")
        try:
            run, _ = await handle.answer(
                _answer_value(message), source="a2a", key=f"a2a:{message.message_id}"
            )
        except WaitNotOpen as exc:
            raise UnsupportedOperationError(message=str(exc)) from None
        except (NothingToResume, WhichWait):
            raise UnsupportedOperationError(message=await _not_answerable(handle)) from None
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


async def _task(ctx: AppContext, task_id: str, graph: str, verb: Verb = "read") -> RunHandle:
    """The caller's run of this endpoint's graph, found by the run service for ``verb``
    (any other is no task here); an outage is said as one, never as "not found"."""
    try:
        handle = await ctx.runs.handle(task_id, verb)
    except OutlastError as exc:
        if fault_of(exc) is Fault.NOT_FOUND:
            raise TaskNotFoundError(message=f"Task {task_id} not found") from None
        raise refusal(exc) from None
    if handle.run.graph != graph:
        raise TaskNotFoundError(message=f"Task {task_id} not found")
    return handle


async def _not_answerable(handle: RunHandle) -> str:
    """Why a follow-up that names no wait answers nothing, in A2A's words."""
    now = await handle.now()
    run = now.run if now is not None else handle.run
    if run.terminal:
        return f"Task {run.id} is in terminal state: {run.status.value}"
    asked = now.asked if now is not None else []
    if len(asked) > 1:
        return (
            f"Task {run.id} asks {len(asked)} things at once; answer them through "
            "POST /v1/runs/{id}/input, one wait at a time"
        )
    return f"Task {run.id} asks for nothing now: it is {run.status.value}"


async def _settled(ctx: AppContext, run: Run, until: Until) -> Task:
    """The task once ``until`` accepts its run, or as it is after the server's longest
    wait (a client keeps following with GetTask or subscribe)."""
    now = await RunHandle(ctx.runs, run).settle(until, ctx.settings.result_wait_max)
    if now is None:
        raise TaskNotFoundError(message=f"Task {run.id} not found")
    return task_of(now.run, now.waits)


async def _follow(ctx: AppContext, run: Run) -> AsyncGenerator[Any]:
    """The task, then a status update at each change of its state, up to its end or its
    next question; read from the store, so it is the same after a restart."""
    last: int | None = None
    async for now in RunHandle(ctx.runs, run).states():
        task = task_of(now.run, now.waits)
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
        if needs_a_client(now):
            return
    raise TaskNotFoundError(message=f"Task {run.id} not found")
