"""Helpers of the LangGraph face's tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.harness import eventually, sse_events


def seq_of(event_id: str) -> tuple[int, int]:
    """A run stream's event id in order: ``<seq>``, or ``<seq>.<epoch>.<n>`` (a model
    chunk sent live: the log up to seq, and chunk n)."""
    seq, *live = event_id.split(".")
    return int(seq), int(live[1]) if live else -1


def reply_of(parts: list[Any]) -> str:
    """The model's output in a run stream's ``messages`` (messages-tuple) frames."""
    return "".join(str(p.data[0]["content"]) for p in parts if p.event == "messages")


def others(parts: list[Any]) -> list[tuple[str, int, Any]]:
    """A run stream's frames but the model's chunks (which go live one by one, and
    coalesced from the log), with the seqs of their ids."""
    return [(p.event, seq_of(p.id)[0], p.data) for p in parts if p.event != "messages"]


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


def ended(frame: dict[str, Any]) -> bool:
    """A protocol frame that ends a run for the protocol's clients: the root's
    ``completed`` or ``failed``."""
    params = frame.get("params") or {}
    return (
        frame.get("method") == "lifecycle"
        and params.get("namespace") == []
        and params["data"]["event"] in ("completed", "failed")
    )


async def protocol_frames(
    client: httpx.AsyncClient,
    thread: str,
    body: dict[str, Any],
    until: Callable[[dict[str, Any]], bool] = ended,
) -> list[dict[str, Any]]:
    """The frames of the thread's protocol v2 stream (``POST /threads/{t}/stream/events``
    with ``body``), read raw up to the first one ``until`` accepts, included."""
    out: list[dict[str, Any]] = []
    async with client.stream("POST", f"/threads/{thread}/stream/events", json=body) as r:
        assert r.status_code == 200, await r.aread()
        async for item in sse_events(r):
            out.append(item.data)
            if until(item.data):
                break
    return out


def same_events(seen: list[dict[str, Any]], replay: list[dict[str, Any]]) -> None:
    """What a client saw live is what a replay of the log gives: the same events (by
    event id, with the same data), each once, a model's events in the same order, and
    ``seq`` strictly increasing along what it saw. (A token sent live has its own place,
    and may overtake an event stored just before it.)"""

    def events(frames: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            f["event_id"]: (f["method"], f["params"]["namespace"], f["params"]["data"])
            for f in frames
        }

    def messages(frames: list[dict[str, Any]]) -> list[str]:
        return [f["event_id"] for f in frames if f["method"] == "messages"]

    assert len({f["event_id"] for f in seen}) == len(seen)
    assert events(seen) == events(replay)
    assert messages(seen) == messages(replay)
    seqs = [f["seq"] for f in seen]
    assert seqs == sorted(set(seqs))
