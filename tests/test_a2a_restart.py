"""A2A tasks outlive the server: ``outlast serve`` SIGKILLed and started again, the
``a2a-sdk`` client finds its tasks, resubscribes to one (which a cancel then ends) and
answers another (both backends)."""

from __future__ import annotations

import asyncio
import datetime as dt
import signal
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import new_data_part, new_text_part
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

from tests.harness import eventually
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow


async def _client(http: httpx.AsyncClient, url: str, graph: str, streaming: bool = False) -> Any:
    card = await A2ACardResolver(http, f"{url}/a2a/{graph}").get_agent_card()
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)


def _message(*parts: object, **fields: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=parts, **fields)


async def test_tasks_survive_a_sigkill_and_are_followed_from_the_store(
    db_url: str, tmp_path: Path
) -> None:
    server, url = start_server(db_url, tmp_path / "s1.log")
    port = int(url.rsplit(":", 1)[1])
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            asks = await _client(http, url, "asks")
            request = SendMessageRequest(message=_message(new_data_part({})))
            (asked,) = [sr.task async for sr in asks.send_message(request)]
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            sleeper = await _client(http, url, "sleeper")
            until = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
            timed = _message(new_data_part({}))
            timed.metadata.update({"config": {"configurable": {"until": until}}})
            request = SendMessageRequest(message=timed)
            request.configuration.return_immediately = True
            (sleeping,) = [sr.task async for sr in sleeper.send_message(request)]
        server.send_signal(signal.SIGKILL)
        assert server.wait(timeout=30) == -signal.SIGKILL
    finally:
        kill(server)
    server, url = start_server(db_url, tmp_path / "s2.log", port=port)
    try:
        async with httpx.AsyncClient(timeout=60) as http:
            sleeper = await _client(http, url, "sleeper", streaming=True)
            got = await sleeper.get_task(GetTaskRequest(id=sleeping.id))
            assert got.status.state == TaskState.TASK_STATE_WORKING  # waiting on its timer
            events: list[Any] = []

            async def follow() -> None:
                async for event in sleeper.subscribe(SubscribeToTaskRequest(id=sleeping.id)):
                    events.append(event)

            following = asyncio.create_task(follow())
            await eventually(lambda: events, what="the subscription's first event")
            assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
            await sleeper.cancel_task(CancelTaskRequest(id=sleeping.id))
            await asyncio.wait_for(following, 60)
            assert events[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
            asks = await _client(http, url, "asks", streaming=True)
            again = await asks.get_task(GetTaskRequest(id=asked.id))
            assert again.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            follow = _message(new_text_part("Ada"), task_id=asked.id, context_id=asked.context_id)
            streamed = [e async for e in asks.send_message(SendMessageRequest(message=follow))]
            assert streamed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
            done = await asks.get_task(GetTaskRequest(id=asked.id))
            assert dict(done.artifacts[0].parts[0].data.struct_value)["greeting"] == "hello Ada"
    finally:
        kill(server)
