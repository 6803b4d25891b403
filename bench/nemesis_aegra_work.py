"""The Aegra nemesis's workload: bench/nemesis_work.py's, through the LangGraph API only.

Aegra has no native face, so every run of ``slow`` is made with ``langgraph_sdk``
(``stream_resumable``, modes ``custom`` and ``values``, as the LangGraph half of outlast's
workload), and followed by ``nemesis_work.follow_lg``: rejoining with the last event id
through whichever Aegra process answers. Statuses come from ``client.runs.get``; Aegra's
words are mapped to outlast's (``success`` is ``completed``, ...) so the verdict of
bench/nemesis_work.py counts both deployments alike.

What the stream should have been: Aegra keeps a run's events in a Redis replay buffer (10
minutes after the last one), and a rejoin whose ``Last-Event-ID`` is not in it gets the
whole buffer; read once the run is over, that is the log a follower is held to. Aegra
writes no seam when a run is retried after a crash (outlast's ``run.started``), so a tick
in the buffer twice cannot be told a node that ran again from an event stored twice: the
``log_repeats`` column counts event ids stored twice instead (an append stored twice),
and ticks repeated anyhow are in each trial's ``ticks_repeated_in_log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from nemesis_work import TICKS, Followed, counts

from outlast.client.sse import frames

# Aegra's terminal statuses in outlast's words (bench/nemesis_work.py's FINAL)
AS_OUTLAST = {"success": "completed", "error": "failed", "timeout": "failed",
              "interrupted": "cancelled"}  # fmt: skip


class AegraFollowed(Followed):
    def exact(self) -> bool:
        """As on outlast's LangGraph face (every event of the log once, in order, and the
        end), and every tick there: a run whose buffer lost an event is not exact either."""
        return super().exact() and set(range(TICKS)) <= set(self.ticks)

    def log_repeats(self) -> int:
        seqs = [seq for seq, _, _ in self.log]
        return len(seqs) - len(set(seqs))

    def ticks_repeated_in_log(self) -> int:
        ticks = [tick for _, kind, tick in self.log if kind == "custom"]
        return len(ticks) - len(set(ticks))


def _options(record: Path, rng: random.Random) -> dict[str, Any]:
    return {
        "record": str(record),
        "delay": round(rng.uniform(0.2, 1.5), 2),
        "ticks": TICKS,
        "tick": round(rng.uniform(0.2, 0.6), 2),
    }


async def _create(bases: list[str], key: str, options: dict[str, Any]) -> AegraFollowed:
    """A run of ``slow`` on a thread of its own, through the first base that takes it.
    No retry of ``runs.create`` itself once a thread exists: the LangGraph API has no
    idempotency key, so a retry after a lost answer would be a second run."""
    for attempt in range(60):
        client = get_client(url=bases[attempt % len(bases)], timeout=10.0)
        try:
            thread = (await client.threads.create())["thread_id"]
            run = await client.runs.create(
                thread, "slow", input={"key": key}, config={"configurable": options},
                stream_mode=["custom", "values"], stream_resumable=True,
            )  # fmt: skip
            return AegraFollowed(key, "langgraph", run["run_id"], thread)
        except httpx.HTTPError:
            await asyncio.sleep(0.5)
        finally:
            await client.aclose()
    raise RuntimeError(f"run {key} was never accepted")


async def submit(
    bases: list[str], record: Path, prefix: str, runs: int, rng: random.Random
) -> list[AegraFollowed]:
    """``runs`` runs, alternately through each Aegra process."""
    made = []
    for i in range(runs):
        key, options = f"{prefix}-{i}", _options(record, rng)
        made.append(_create(bases[i % len(bases) :] + bases, key, options))
    return list(await asyncio.gather(*made))


async def _status(bases: list[str], thread: str, run_id: str) -> str:
    for base in bases:
        client = get_client(url=base, timeout=5.0)
        try:
            got = str((await client.runs.get(thread, run_id))["status"])
            return AS_OUTLAST.get(got, got)
        except (httpx.HTTPError, KeyError):
            continue
        finally:
            await client.aclose()
    return "unknown"


async def statuses(bases: list[str], runs: list[AegraFollowed]) -> dict[str, str]:
    got = await asyncio.gather(*(_status(bases, r.thread_id, r.run_id) for r in runs))
    return {r.key: status for r, status in zip(runs, got, strict=True)}


async def settle(
    bases: list[str], runs: list[AegraFollowed], record: Path, limit: float
) -> dict[str, str]:
    """Wait until every run completed (per the record) and is terminal, or ``limit``."""
    deadline = time.monotonic() + limit
    while True:
        done = counts(record, "done")
        now = await statuses(bases, runs)
        finished = all(now[r.key] in AS_OUTLAST.values() for r in runs)
        if (finished and all(done[r.key] >= 1 for r in runs)) or time.monotonic() >= deadline:
            return now
        await asyncio.sleep(0.5)


async def read_log(bases: list[str], run: AegraFollowed, limit: float = 20.0) -> bool:
    """The run's whole replay buffer, asked with an event id it does not hold (the
    stream's events straight from the wire, without the SDK's own rejoins). Whether the
    stream ended: Aegra may hold it open (keepalives, no end) after the run is over,
    so each read has ``limit`` seconds, and the longest part read is kept."""
    headers = {"Last-Event-ID": f"{run.run_id}_event_0"}
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base in bases:
            url = f"{base}/threads/{run.thread_id}/runs/{run.run_id}/stream"
            log: list[tuple[int, str, int | None]] = []
            with contextlib.suppress(httpx.HTTPError, ValueError, TimeoutError):
                async with (
                    asyncio.timeout(limit),
                    client.stream("GET", url, headers=headers) as got,
                ):
                    got.raise_for_status()
                    async for frame in frames(got.aiter_lines()):
                        if not frame.id or "_event_" not in frame.id:
                            continue
                        tick = None
                        if frame.event == "custom" and frame.data:
                            tick = json.loads(frame.data).get("tick")
                        log.append((int(frame.id.rsplit("_event_", 1)[1]), frame.event, tick))
                    run.log = log
                    return True
            if len(log) > len(run.log):
                run.log = log
    return False


async def a_run_completes(base: str, deadline: float) -> bool:
    """A run of ``ten`` made through ``base`` reaches ``success`` (whichever process
    executes it: they share one queue)."""
    client = get_client(url=base, timeout=10.0)
    try:
        while time.monotonic() < deadline:
            try:
                thread = (await client.threads.create())["thread_id"]
                run = await client.runs.create(thread, "ten", input={})
                while time.monotonic() < deadline:
                    status = (await client.runs.get(thread, run["run_id"]))["status"]
                    if status == "success":
                        return True
                    if status in AS_OUTLAST:
                        break  # failed: make another
                    await asyncio.sleep(0.2)
            except (httpx.HTTPError, KeyError):
                await asyncio.sleep(0.5)
        return False
    finally:
        await client.aclose()
