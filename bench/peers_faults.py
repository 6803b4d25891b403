"""What each peer loses when all of its processes are SIGKILLed, the same scenario on each.

**In flight**: 20 runs of ``slow`` on 20 threads, each past its side effect and still
working in the node that performed it (a crash there is what makes a runtime without a
ledger send twice); one of them, followed by a client through ``runs.join_stream``, is
already streaming its ticks. When all 20 effects are recorded and the client has seen two
ticks, every process of the server gets SIGKILL; the server starts again on the same port
and database. Then, for a bounded time, the bench watches what the runs do.

**Waiting**: 20 runs of ``ask`` on 20 threads, each waiting at its ``interrupt()``; SIGKILL,
start again, and answer every one (``runs.wait`` with ``command={"resume": ...}``).

What is counted comes from the record file the graphs write (one line per effect, one per
completion), not from the server's own account:

- **lost**: runs whose last node never ran (the run never completed);
- **finished twice**: runs whose last node ran more than once;
- **effects twice**: runs whose side effect was performed more than once;
- **the stream**: whether the client could rejoin (``Last-Event-ID``, as the SDK sends it)
  and got every tick exactly once and the end, after the restart.

The server's own statuses at the end are reported beside, as it reports them.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from pathlib import Path
from typing import Any

import httpx
from benchkit import r
from langgraph_sdk.client import LangGraphClient
from peerkit import TERMINAL, Peer, record_lines, wait_for
from peers_speed import sdk

RUNS = 20
FOLLOWED_TICKS = 8


def _counts(record: Path, kind: str, keys: list[str]) -> dict[str, int]:
    seen = collections.Counter(
        line.split(" ", 1)[1] for line in record_lines(record) if line.startswith(kind + " ")
    )
    return {k: seen.get(k, 0) for k in keys}


async def _status(client: LangGraphClient, thread: str, run: str) -> str:
    try:
        return str((await client.runs.get(thread, run))["status"])
    except httpx.HTTPStatusError as exc:
        return f"http {exc.response.status_code}"
    except httpx.HTTPError as exc:
        return type(exc).__name__


def _verdict(record: Path, keys: list[str]) -> dict[str, Any]:
    done, effects = _counts(record, "done", keys), _counts(record, "effect", keys)
    return {
        "runs": len(keys),
        "completed": sum(1 for k in keys if done[k] >= 1),
        "lost": sum(1 for k in keys if done[k] == 0),
        "finished_twice": sum(1 for k in keys if done[k] > 1),
        "effects_twice": sum(1 for k in keys if effects[k] > 1),
        "effects": sum(effects.values()),
    }


class Follower:
    """A client streaming one run that rejoins after the cut, as a user's app would: the
    SDK's ``join_stream`` with the last event id it saw."""

    def __init__(self, client: LangGraphClient, thread: str, run: str) -> None:
        self.client, self.thread, self.run = client, thread, run
        self.ticks: list[int] = []
        self.ids: list[str] = []
        self.times: list[float] = []  # when each event arrived
        self.cuts = 0  # the stream failed and this client rejoined (the SDK may rejoin itself)
        self.outcome = "still open"

    async def follow(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        last: str | None = None
        while time.monotonic() < deadline:
            try:
                # the run's own stream modes: LangGraph's servers keep only the first mode
                # a join names
                async for part in self.client.runs.join_stream(
                    self.thread, self.run, last_event_id=last
                ):
                    if part.event != "error":
                        self.times.append(time.monotonic())
                    if part.id:
                        self.ids.append(part.id)
                        last = part.id
                    if part.event == "custom" and isinstance(part.data, dict):
                        self.ticks.append(int(part.data["tick"]))
                    if part.event == "error":
                        self.outcome = f"error event: {str(part.data)[:120]}"
                        return
                self.outcome = "ended"
                return
            except httpx.HTTPStatusError as exc:
                self.outcome = f"rejoin answered {exc.response.status_code}"
                if exc.response.status_code < 500:
                    return
            except (httpx.HTTPError, OSError):
                self.cuts += 1
            await asyncio.sleep(0.2)

    def verdict(self, restarted_at: float) -> dict[str, Any]:
        after = sum(1 for t in self.times if t >= restarted_at)
        repeats = sum(n - 1 for n in collections.Counter(self.ticks).values() if n > 1)
        return {
            "ticks": self.ticks,
            "missing": sorted(set(range(FOLLOWED_TICKS)) - set(self.ticks)),
            "repeated": repeats,
            "repeated_ids": len(self.ids) - len(set(self.ids)),
            "client_rejoins": self.cuts,
            "events_after_restart": after,
            "rejoined": after > 0,
            "outcome": self.outcome,
            "exact": self.outcome == "ended"
            and sorted(self.ticks) == list(range(FOLLOWED_TICKS))
            and repeats == 0,
        }


async def _settle(
    client: LangGraphClient,
    runs: list[tuple[str, str]],
    record: Path,
    keys: list[str],
    limit: float,
) -> dict[str, int]:
    """Watch until every run completed per the record and reports a terminal status, or
    ``limit`` passed; the statuses it reports then."""
    statuses: dict[str, int] = {}

    async def all_done() -> bool:
        nonlocal statuses
        got = await asyncio.gather(*(_status(client, t, run) for t, run in runs))
        statuses = dict(collections.Counter(got))
        done = _counts(record, "done", keys)
        # a run the server no longer knows (404) is over for good: it cannot come back
        return all(
            status == "http 404" or (done[key] >= 1 and status in TERMINAL)
            for key, status in zip(keys, got, strict=True)
        )

    await wait_for(all_done, limit, step=0.5)
    return statuses


async def in_flight(peer: Peer, folder: Path, opts: Any) -> dict[str, Any]:
    record = folder / f"{peer.name.replace(' ', '-')}-in-flight.txt"
    client = sdk(peer.base)
    keys = [f"k{i}" for i in range(RUNS)]
    runs: list[tuple[str, str]] = []
    for i, key in enumerate(keys):
        thread = (await client.threads.create())["thread_id"]
        followed = i == 0
        options = {
            "record": str(record),
            "delay": 0.3 if followed else opts.fault_delay,
            "ticks": FOLLOWED_TICKS if followed else 3,
            "tick": 0.4 if followed else 0.2,
        }
        run = await client.runs.create(
            thread,
            "slow",
            input={"key": key},
            config={"configurable": options},
            stream_mode=["custom", "values"],
            # LangGraph's servers keep a run's stream for a rejoin only when asked
            stream_resumable=True,
        )
        runs.append((thread, run["run_id"]))
    follower = Follower(client, *runs[0])
    following = asyncio.create_task(follower.follow(opts.fault_wait + 30))

    async def armed() -> bool:
        return sum(_counts(record, "effect", keys).values()) >= RUNS and len(follower.ticks) >= 2

    if not await wait_for(armed, 60):
        following.cancel()
        raise RuntimeError(
            f"the runs never got going: {len(record_lines(record))} records, "
            f"{len(follower.ticks)} ticks streamed"
        )
    before = {"effects": RUNS, "ticks_streamed": len(follower.ticks)}
    killed = time.monotonic()
    peer.kill()
    await peer.start()
    restarted_at = time.monotonic()
    restarted = restarted_at - killed
    statuses = await _settle(client, runs, record, keys, opts.fault_wait)
    settled = time.monotonic() - killed
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(following, 15)
    following.cancel()
    await client.aclose()
    return {
        **_verdict(record, keys),
        "at_kill": before,
        "statuses": statuses,
        "restart_s": r(restarted),
        "settled_s": r(settled),
        "stream": follower.verdict(restarted_at),
    }


async def waiting(peer: Peer, folder: Path, opts: Any) -> dict[str, Any]:
    record = folder / f"{peer.name.replace(' ', '-')}-waiting.txt"
    client = sdk(peer.base)
    keys = [f"w{i}" for i in range(RUNS)]
    config = {"configurable": {"record": str(record)}}
    threads: list[str] = []
    for key in keys:
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(thread, "ask", input={"key": key}, config=config)
        await client.runs.join(thread, run["run_id"])
        threads.append(thread)
    peer.kill()
    await peer.start()
    errors: collections.Counter[str] = collections.Counter()

    async def answer(thread: str) -> str | None:
        try:
            await asyncio.wait_for(
                client.runs.wait(thread, "ask", command={"resume": "yes"}, config=config),
                opts.fault_wait,
            )
        except httpx.HTTPStatusError as exc:
            return f"{exc.response.status_code}: {exc.response.text[:100]}"
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc)[:100]}"
        return None

    for failure in await asyncio.gather(*(answer(t) for t in threads)):
        if failure is not None:
            errors[failure] += 1
    await client.aclose()
    return {**_verdict(record, keys), "answer_errors": dict(errors)}
