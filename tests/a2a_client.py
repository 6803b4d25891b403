"""The ``a2a-sdk`` client on an outlast server (the A2A face's tests): an agent per graph,
found by its Agent Card, and the messages sent to it."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, Task


def message(*parts: Part, task: Task | None = None, message_id: str | None = None) -> Message:
    msg = Message(role=Role.ROLE_USER, message_id=message_id or str(uuid.uuid4()), parts=parts)
    if task is not None:
        msg.task_id, msg.context_id = task.id, task.context_id
    return msg


class Agent:
    def __init__(self, http: httpx.AsyncClient, base: str) -> None:
        self.http, self.base = http, base

    async def client(self, graph: str, streaming: bool = False) -> Any:
        card = await A2ACardResolver(self.http, f"{self.base}/a2a/{graph}").get_agent_card()
        return ClientFactory(ClientConfig(streaming=streaming, httpx_client=self.http)).create(card)

    async def send(self, graph: str, message: Message, **config: Any) -> Task:
        client = await self.client(graph)
        request = SendMessageRequest(message=message)
        for key, value in config.items():
            setattr(request.configuration, key, value)
        got = [sr async for sr in client.send_message(request)]
        assert len(got) == 1 and got[0].HasField("task"), got
        task: Task = got[0].task
        return task
