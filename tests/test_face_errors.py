"""One error rule for the JSON-RPC faces (``errors.fault_of``): what a client may retry
(a store outage, a limit) is said to be retryable in A2A's and MCP's words, never "task
not found" nor "invalid params", which tell a client to stop."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from a2a.helpers import new_text_part
from a2a.types import GetTaskRequest
from a2a.utils.errors import InternalError, TaskNotFoundError
from mcp.shared.exceptions import MCPError

from outlast.errors import StoreUnavailable
from outlast.store import Store
from tests.a2a_client import Agent, message
from tests.harness import make_settings, serve
from tests.mcp_client import connect


def one_in_flight(tmp_path: Path) -> Any:
    return make_settings(data_dir=tmp_path, max_runs_in_flight=1, result_wait_max=20)


async def test_a2a_says_a_limit_and_an_outage_may_be_retried(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        serve(store, one_in_flight(tmp_path), with_worker=False) as srv,
        httpx.AsyncClient(timeout=60) as http,
    ):
        agent = Agent(http, srv.url)
        first = await agent.send("steps", message(new_text_part("a")), return_immediately=True)
        with pytest.raises(InternalError) as limited:
            await agent.send("steps", message(new_text_part("b")), return_immediately=True)
        assert limited.value.data is not None
        assert limited.value.data["retryable"] is True and limited.value.data["retry_after"] > 0
        client = await agent.client("steps")
        with pytest.raises(TaskNotFoundError):  # what does not exist is still said so
            await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))

        async def outage(run_id: str) -> None:
            raise StoreUnavailable("the database is restarting")

        monkeypatch.setattr(srv.store, "get_run", outage)
        with pytest.raises(InternalError) as unavailable:
            await client.get_task(GetTaskRequest(id=first.id))
        assert unavailable.value.data is not None and unavailable.value.data["retryable"] is True
        assert "Store unavailable" in unavailable.value.message


async def test_mcp_says_a_limit_and_an_outage_may_be_retried(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        serve(store, one_in_flight(tmp_path), with_worker=False) as srv,
        connect(srv.url) as peer,
    ):
        task_id = await peer.call_as_task("lg_slow", {})
        with pytest.raises(MCPError) as limited:
            await peer.call_as_task("lg_slow", {})
        assert limited.value.code == types.INTERNAL_ERROR
        assert limited.value.data["retryable"] is True and limited.value.data["retry_after"] > 0
        with pytest.raises(MCPError) as missing:
            await peer.task(str(uuid.uuid4()))
        assert missing.value.code == types.INVALID_PARAMS
        assert "not found" in missing.value.message

        async def outage(run_id: str) -> None:
            raise StoreUnavailable("the database is restarting")

        monkeypatch.setattr(srv.store, "get_run", outage)
        with pytest.raises(MCPError) as unavailable:
            await peer.task(task_id)
        assert unavailable.value.code == types.INTERNAL_ERROR
        assert unavailable.value.data["retryable"] is True
        assert "not found" not in unavailable.value.message
