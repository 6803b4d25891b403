"""A trial's workload, its followers, and the verdict read from what really happened.

The workload is bench/peers/graphs.py's ``slow``: a side effect through outlast's ledger
(declared as an email is: not idempotent, reconciled by asking the provider), then ticks
streamed one per node, then a completion; every effect and completion is a line in the
trial's record file, written by the graph itself. Half the runs go through the native
face (``POST /v1/runs`` with an ``Idempotency-Key``, retried on any failure as a client
would), half through ``langgraph_sdk``; every run has a client following its stream
from its start, which rejoins after every cut with the last event id it saw, through
whichever HTTP process answers.

The verdict counts from the record file and the database, not from the server's account:
lost (never completed), finished twice, effects twice, streams that are not the log
exactly (a tick missing or repeated, an id repeated, no end), and runs stuck (not
terminal) when the trial's time is up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from peerkit import record_lines

from outlast.client.sse import frames

TICKS = 4
FINAL = frozenset({"completed", "failed", "cancelled"})
NATIVE_END = frozenset({"run.completed", "run.failed", "run.cancelled"})
# The LangGraph face's frames that are not events of the log: they carry the cursor they
# sit at, so a rejoin there sends them again with the same id (api/lg/wire.py).
SIGNALS = frozenset({"metadata", "end"})


@dataclass
class Followed:
    """One run and what its follower saw."""

    key: str
    face: str  # native | langgraph
    run_id: str
    thread_id: str
    ticks: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    rejoins: int = 0
    outcome: str = "still open"

    log: list[tuple[int, str, int | None]] = field(default_factory=list)  # (seq, type, tick)

    def exact(self) -> bool:
        """The stream was the log: every event of it once, in order (on the native face,
        whose stream is the whole log; on the LangGraph face, its custom events), and it
        ended. A tick in the log twice (a step that ran again after a crash, the seam
        marked by ``run.resumed``) must reach the client twice too."""
        if self.outcome != "ended" or len(self.ids) != len(set(self.ids)):
            return False
        logged = [tick for _, kind, tick in self.log if kind == "custom"]
        if self.face == "native" and self.ids != [str(seq) for seq, _, _ in self.log]:
            return False
        return self.ticks == logged

    def log_repeats(self) -> int:
        """Ticks logged twice within one attempt: an append stored twice, not a step
        that ran again (that is a new attempt, after a ``run.started``)."""
        repeats, seen = 0, set()
        for _, kind, tick in self.log:
            if kind == "run.started":
                seen = set()
            elif kind == "custom":
                repeats += tick in seen
                seen.add(tick)
        return repeats


def _options(record: Path, rng: random.Random) -> dict[str, Any]:
    return {
        "record": str(record),
        "delay": round(rng.uniform(0.2, 1.5), 2),
        "ticks": TICKS,
        "tick": round(rng.uniform(0.2, 0.6), 2),
    }


async def _native_create(bases: list[str], key: str, options: dict[str, Any]) -> Followed:
    body = {"graph": "slow", "input": {"key": key}, "config": {"configurable": options}}
    async with httpx.AsyncClient(timeout=10.0) as client:
        for attempt in range(60):
            base = bases[attempt % len(bases)]
            with contextlib.suppress(httpx.HTTPError):
                got = await client.post(
                    f"{base}/v1/runs", json=body, headers={"Idempotency-Key": key}
                )
                if got.status_code in (200, 201, 202):
                    run = got.json()
                    return Followed(key, "native", run["id"], run["thread_id"])
            await asyncio.sleep(0.5)
    raise RuntimeError(f"run {key} was never accepted")


async def _lg_create(base: str, key: str, options: dict[str, Any]) -> Followed:
    client = get_client(url=base)
    try:
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            thread, "slow", input={"key": key}, config={"configurable": options},
            stream_mode=["custom", "values"], stream_resumable=True,
        )  # fmt: skip
    finally:
        await client.aclose()
    return Followed(key, "langgraph", run["run_id"], thread)


async def submit(
    bases: list[str], record: Path, prefix: str, runs: int, rng: random.Random
) -> list[Followed]:
    """``runs`` runs, alternately on each face and each HTTP process."""
    made = []
    for i in range(runs):
        key, options = f"{prefix}-{i}", _options(record, rng)
        if i % 2 == 0:
            made.append(_native_create(bases[i // 2 % len(bases) :] + bases, key, options))
        else:
            made.append(_lg_create(bases[i // 2 % len(bases)], key, options))
    return list(await asyncio.gather(*made))


async def follow_native(bases: list[str], run: Followed, limit: float) -> None:
    deadline, attempt = time.monotonic() + limit, 0
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=30.0)) as client:
        while time.monotonic() < deadline:
            base, attempt = bases[attempt % len(bases)], attempt + 1
            headers = {"Last-Event-ID": run.ids[-1]} if run.ids else {}
            try:
                url = f"{base}/v1/runs/{run.run_id}/events"
                async with client.stream("GET", url, headers=headers) as response:
                    response.raise_for_status()
                    async for frame in frames(response.aiter_lines()):
                        if frame.id:
                            run.ids.append(frame.id)
                        if frame.event == "custom" and frame.data:
                            # the event's data: what the node wrote, and its namespace
                            written = json.loads(frame.data)["data"]["data"]
                            run.ticks.append(int(written["tick"]))
                        if frame.event in NATIVE_END:
                            run.outcome = "ended"
                            return
            except (httpx.HTTPError, OSError):
                pass
            except Exception as exc:  # the follower's own bug: say so, not "inexact"
                run.outcome = f"follower failed: {exc!r}"
                return
            run.rejoins += 1
            await asyncio.sleep(0.2)


async def follow_lg(bases: list[str], run: Followed, limit: float) -> None:
    deadline, attempt, last = time.monotonic() + limit, 0, None
    while time.monotonic() < deadline:
        client = get_client(url=bases[attempt % len(bases)])
        attempt += 1
        try:
            async for part in client.runs.join_stream(
                run.thread_id, run.run_id, last_event_id=last
            ):
                last = part.id or last
                if part.id and part.event not in SIGNALS:
                    run.ids.append(part.id)
                if part.event == "custom" and isinstance(part.data, dict):
                    run.ticks.append(int(part.data["tick"]))
                if part.event == "error":
                    run.outcome = f"error event: {str(part.data)[:100]}"
                    return
            run.outcome = "ended"
            return
        except (httpx.HTTPError, OSError):
            pass
        except Exception as exc:
            run.outcome = f"follower failed: {exc!r}"
            return
        finally:
            await client.aclose()
        run.rejoins += 1
        await asyncio.sleep(0.2)


def follow(bases: list[str], run: Followed, limit: float) -> asyncio.Task[None]:
    how = follow_native if run.face == "native" else follow_lg
    return asyncio.create_task(how(bases, run, limit))


async def statuses(bases: list[str], runs: list[Followed]) -> dict[str, str]:
    """Each run's status, as the native face reports it (any run, either face's)."""
    out: dict[str, str] = {}
    async with httpx.AsyncClient(timeout=5.0) as client:
        for run in runs:
            out[run.key] = "unknown"
            for base in bases:
                with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                    got = await client.get(f"{base}/v1/runs/{run.run_id}")
                    if got.status_code == 200:
                        out[run.key] = str(got.json()["status"])
                        break
    return out


def counts(record: Path, kind: str) -> collections.Counter[str]:
    return collections.Counter(
        line.split(" ", 1)[1] for line in record_lines(record) if line.startswith(kind + " ")
    )


async def settle(
    bases: list[str], runs: list[Followed], record: Path, limit: float
) -> dict[str, str]:
    """Wait until every run completed (per the record) and is terminal, or ``limit``."""
    deadline = time.monotonic() + limit
    while True:
        done = counts(record, "done")
        now = await statuses(bases, runs)
        if all(done[r.key] >= 1 and now[r.key] in FINAL for r in runs):
            return now
        if time.monotonic() >= deadline:
            return now
        await asyncio.sleep(0.5)


def verdict(runs: list[Followed], record: Path, final: dict[str, str]) -> dict[str, Any]:
    done, effects = counts(record, "done"), counts(record, "effect")
    inexact = [r for r in runs if not r.exact()]
    return {
        "runs": len(runs),
        "lost": sum(1 for r in runs if done[r.key] == 0),
        "twice": sum(1 for r in runs if done[r.key] > 1),
        "effects_twice": sum(1 for r in runs if effects[r.key] > 1),
        "inexact_streams": len(inexact),
        "log_repeats": sum(r.log_repeats() for r in runs),
        "stuck": sum(1 for r in runs if final.get(r.key) not in FINAL),
        "rejoins": sum(r.rejoins for r in runs),
        "inexact": [
            {"key": r.key, "run_id": r.run_id, "face": r.face, "ticks": r.ticks}
            | {"outcome": r.outcome, "ids": r.ids}
            | {"log": [f"{seq}:{kind}" for seq, kind, _ in r.log]}
            for r in inexact
        ],
    }


async def read_log(bases: list[str], run: Followed) -> None:
    """The run's whole log, read afresh once it is over: what its stream should have been."""
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base in bases:
            with contextlib.suppress(httpx.HTTPError):
                async with client.stream("GET", f"{base}/v1/runs/{run.run_id}/events") as got:
                    log: list[tuple[int, str, int | None]] = []
                    async for frame in frames(got.aiter_lines()):
                        if not frame.id:
                            continue  # the stream's own hello, not an event of the log
                        tick = None
                        if frame.event == "custom" and frame.data:
                            tick = json.loads(frame.data)["data"]["data"].get("tick")
                        log.append((int(frame.id), frame.event, tick))
                    run.log = log
                    return
