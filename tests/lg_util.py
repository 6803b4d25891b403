"""Helpers of the LangGraph face's tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from tests.harness import eventually


@dataclass
class Follower:
    """A client streaming a slow run in the background: what it has seen so far, and the
    run it created (``on_run_created``)."""

    seen: list[Any] = field(default_factory=list)
    created: list[Any] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    @property
    def run_id(self) -> str:
        return str(self.created[0]["run_id"])


def follow_slow(client: Any, thread: str, steps: int, delay: float) -> Follower:
    """Stream ``lg_slow`` (values and updates) on ``thread`` through the SDK."""
    follower = Follower()

    async def follow() -> None:
        async for part in client.runs.stream(
            thread,
            "lg_slow",
            input={},
            config={"configurable": {"steps": steps, "delay": delay}},
            stream_mode=["values", "updates"],
            on_run_created=follower.created.append,
        ):
            follower.seen.append(part)

    follower.task = asyncio.create_task(follow())
    return follower


async def until_status(client: Any, thread: str, run_id: str, status: str) -> None:
    """Until the SDK says the run has ``status`` (``eventually``)."""

    async def probe() -> bool:
        return bool((await client.runs.get(thread, run_id))["status"] == status)

    await eventually(probe, what=f"run {run_id} {status}")
