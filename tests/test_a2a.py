"""The A2A 1.0 face through the ``a2a-sdk`` client: a task is a run, on both backends."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
)

from outlast.store import Store
from tests.a2a_client import Agent, message
from tests.harness import make_settings, serve
from tests.receiver import receiver


@pytest.fixture
async def agent(store: Store, tmp_path: Path) -> AsyncIterator[Agent]:
    settings = make_settings(
        result_wait_max=20, webhook_allow_private=True, webhook_backoff=0.05, data_dir=tmp_path
    )
    async with (
        serve(store, settings) as srv,
        httpx.AsyncClient(timeout=60) as http,
    ):
        yield Agent(http, srv.url)


async def test_a_task_is_a_run_that_completes_with_its_result(agent: Agent) -> None:
    task = await agent.send("steps", message(new_text_part("hello")))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = task.artifacts
    result = dict(artifact.parts[0].data.struct_value)
    assert result["steps"][-1] == "finish"
    snapshot = (await agent.http.get(f"{agent.base}/v1/runs/{task.id}")).json()
    assert snapshot["status"] == "completed" and snapshot["thread_id"] == task.context_id
    again = await (await agent.client("steps")).get_task(GetTaskRequest(id=task.id))
    assert again.status.state == TaskState.TASK_STATE_COMPLETED


async def test_input_required_is_answered_by_a_follow_up_exactly_once(agent: Agent) -> None:
    task = await agent.send("asks", message(new_data_part({})))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "What is your name?" in task.status.message.parts[0].text
    follow = message(new_text_part("Ada"), task=task)
    done = await agent.send("asks", follow)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert dict(done.artifacts[0].parts[0].data.struct_value)["greeting"] == "hello Ada"
    with pytest.raises(UnsupportedOperationError, match="terminal"):
        await agent.send("asks", message(new_text_part("Bob"), task=done))


async def test_auth_required_and_a_second_answer_is_refused(agent: Agent) -> None:
    task = await agent.send("auth", message(new_data_part({})))
    assert task.status.state == TaskState.TASK_STATE_AUTH_REQUIRED
    first = message(new_data_part({"token": "t0k"}), task=task)
    done = await agent.send("auth", first)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    again = await agent.send("auth", first)  # the same message, retried: the same task
    assert again.id == task.id and again.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(UnsupportedOperationError, match="terminal"):
        await agent.send("auth", message(new_data_part({"token": "other"}), task=task))


async def test_an_answer_over_the_size_limit_is_refused_and_changes_nothing(
    store: Store, tmp_path: Path
) -> None:
    """The limit every face applies to an answer (``max_answer_bytes``), here too: the A2A
    face once answered without it."""
    settings = make_settings(result_wait_max=20, max_answer_bytes=64, data_dir=tmp_path)
    async with serve(store, settings) as srv, httpx.AsyncClient(timeout=60) as http:
        agent = Agent(http, srv.url)
        task = await agent.send("asks", message(new_data_part({})))
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        with pytest.raises(InvalidParamsError, match="MAX_ANSWER_BYTES"):
            await agent.send("asks", message(new_text_part("A" * 100), task=task))
        (wait,) = await store.list_waits(task.id)
        assert wait.status == "open" and wait.answer is None
        done = await agent.send("asks", message(new_text_part("Ada"), task=task))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED


async def test_an_answer_to_a_task_that_asks_nothing_changes_nothing(agent: Agent) -> None:
    client = await agent.client("slow")
    request = SendMessageRequest(message=message(new_data_part({})))
    request.configuration.return_immediately = True
    (sr,) = [x async for x in client.send_message(request)]
    with pytest.raises(UnsupportedOperationError, match="asks for nothing"):
        await agent.send("slow", message(new_text_part("hm"), task=sr.task))
    with pytest.raises(TaskNotFoundError):  # a task of another graph is no task here
        await agent.send("steps", message(new_text_part("hm"), task=sr.task))
    await client.cancel_task(CancelTaskRequest(id=sr.task.id))


async def test_cancel_unknown_and_subscribe(agent: Agent) -> None:
    client = await agent.client("slow")
    msg = message(new_data_part({}))
    request = SendMessageRequest(message=msg)
    request.configuration.return_immediately = True
    (sr,) = [x async for x in client.send_message(request)]
    task = sr.task
    assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
    streaming = await agent.client("steps", streaming=True)
    events = [
        e
        async for e in streaming.send_message(
            SendMessageRequest(message=message(new_text_part("x")))
        )
    ]
    assert events[0].HasField("task")
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(UnsupportedOperationError):
        [e async for e in streaming.subscribe(SubscribeToTaskRequest(id=events[0].task.id))]


async def test_bad_requests_get_the_protocols_own_error_codes(agent: Agent) -> None:
    headers = {"A2A-Version": "1.0", "content-type": "application/json"}
    url = f"{agent.base}/a2a/steps"

    async def rpc(content: bytes, **extra: str) -> dict[str, Any]:
        reply = await agent.http.post(url, content=content, headers={**headers, **extra})
        body: dict[str, Any] = reply.json()
        return body["error"]

    assert (await rpc(b"{nope"))["code"] == -32700
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "%s", "params": %s}'
    assert (await rpc(call % (b"NoSuchMethod", b"{}")))["code"] == -32601
    unknown = b'{"id": "%s"}' % str(uuid.uuid4()).encode()
    assert (await rpc(call % (b"GetTask", unknown)))["code"] == -32001
    assert (await rpc(call % (b"GetTask", b'{"id": "not-a-uuid"}')))["code"] == -32001
    assert (await rpc(call % (b"SendMessage", b'{"message": {"parts": 3}}')))["code"] == -32602
    runs = (await agent.http.get(f"{agent.base}/v1/runs")).json()
    assert runs["runs"] == []  # nothing was created by any of them
    missing = await agent.http.get(f"{agent.base}/a2a/nope/.well-known/agent-card.json")
    assert missing.status_code == 404
    card = (await agent.http.get(f"{url}/.well-known/agent-card.json")).json()
    assert card["supportedInterfaces"][0]["url"] == url and card["capabilities"]["streaming"]


async def test_a_0_3_client_speaks_the_slash_methods(agent: Agent) -> None:
    url = f"{agent.base}/a2a/asks"
    message = {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "data", "data": {}}],
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
    sent = (await agent.http.post(url, json=call)).json()["result"]
    assert sent["kind"] == "task" and sent["status"]["state"] == "input-required"
    get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": sent["id"]}}
    assert (await agent.http.post(url, json=get)).json()["result"]["id"] == sent["id"]
    cancel = {"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": sent["id"]}}
    canceled = (await agent.http.post(url, json=cancel)).json()["result"]
    assert canceled["status"]["state"] == "canceled"


async def test_push_notifications_go_through_the_outbox_with_the_token(agent: Agent) -> None:
    client = await agent.client("asks")
    task = await agent.send("asks", message(new_data_part({})))  # once it asks
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    with receiver() as hooks:
        config = TaskPushNotificationConfig(
            task_id=task.id,
            id="p1",
            url=f"{hooks.url}/a2a",
            token="tok-123",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="secret-abc"),
        )
        bad = TaskPushNotificationConfig(task_id=task.id, id="p0", url="ftp://example.com/")
        with pytest.raises(InvalidParamsError, match="scheme"):
            await client.create_task_push_notification_config(bad)
        made = await client.create_task_push_notification_config(config)
        assert made.id == "p1" and made.url == config.url and not made.token
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task.id)
        )
        assert [c.id for c in listed.configs] == ["p1"]
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="p1")
        )
        assert got.authentication.scheme == "Bearer" and not got.authentication.credentials
        await agent.send("asks", message(new_text_part("Ada"), task=task))
        seen = await asyncio.to_thread(
            hooks.wait_for,
            lambda r: any(x.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED" for x in r),
            "the completed task",
        )
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="p1")
        )
        with pytest.raises(TaskNotFoundError):
            await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="p1")
            )
    last = seen[-1]
    assert last.path == "/a2a" and last.headers["x-a2a-notification-token"] == "tok-123"
    assert last.headers["authorization"] == "Bearer secret-abc"
    assert last.json()["task"]["id"] == task.id
    assert len({r.id for r in seen}) == len(seen)  # one delivery per change, none twice
