"""Follow a run's event stream to its terminal event, across any number of lost connections.

The cursor is the last seq received; every reconnection sends it as ``Last-Event-ID``, and
anything at or below it is dropped, so an event is handed on exactly once however often the
connection breaks (the server's transport clock, a restart, a flaky network).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import httpx

from outlast.client.api import (
    CONNECT_TIMEOUT,
    RETRY,
    STREAM_READ_TIMEOUT,
    Api,
    Problem,
    Refused,
    describe,
    retryable,
)
from outlast.client.sse import Event, parse
from outlast.retry import Backoff


class Handler(Protocol):
    def event(self, event: Event) -> None: ...

    def notice(self, text: str) -> None: ...


class _Transient(Exception):
    pass


async def follow(api: Api, run_id: str, handler: Handler, after: int = 0) -> Event:
    """Return the run's terminal event once it has been handed to ``handler``."""
    cursor = after
    backoff = Backoff(RETRY)
    connected_before = False
    failing = False  # the previous attempt did not even get a stream
    timeout = httpx.Timeout(STREAM_READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    while True:
        try:
            async with api.client.stream(
                "GET",
                f"/v1/runs/{run_id}/events",
                headers={"Last-Event-ID": str(cursor), "accept": "text/event-stream"},
                timeout=timeout,
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    if retryable(response):
                        raise _Transient(f"server at {api.server} answered {Problem.of(response)}")
                    raise Refused(Problem.of(response))
                if connected_before:
                    handler.notice(f"reconnected, resumed after seq {cursor}")
                elif failing:
                    handler.notice(f"connected to {api.server}")
                connected_before, failing = True, False
                async for event in parse(response.aiter_lines()):
                    backoff.reset()
                    if event.seq is not None:
                        if event.seq <= cursor:
                            continue
                        cursor = event.seq
                    handler.event(event)
                    if event.terminal:
                        return event
            ended = await _ended_without_its_event(api, run_id, cursor)
            if ended is not None:
                handler.event(ended)
                return ended
            failure = f"connection lost (the server closed the stream after seq {cursor})"
        except _Transient as exc:
            failure = str(exc)
        except httpx.TransportError as exc:
            if failing or not connected_before:
                failure = f"server unreachable at {api.server}"
            else:
                failure = f"connection lost ({describe(exc)})"
        failing = True
        delay = backoff.next()
        handler.notice(f"{failure}, retrying in {delay:.1f} s…")
        await asyncio.sleep(delay)


async def _ended_without_its_event(api: Api, run_id: str, cursor: int) -> Event | None:
    """A finished run whose terminal event was pruned: the stream can only ever end empty,
    so the snapshot has to stand in for that event."""
    try:
        response = await api.client.get(f"/v1/runs/{run_id}")
        run = response.json() if response.status_code == 200 else None
    except (httpx.TransportError, ValueError):
        return None
    if not isinstance(run, dict) or run.get("status") not in ("completed", "failed", "cancelled"):
        return None
    if not isinstance(run.get("last_seq"), int) or run["last_seq"] > cursor:
        return None  # its events are still there to be read
    error = run.get("error")
    reason = error.get("reason") if isinstance(error, dict) else None
    data = {"status": run["status"], "result": run.get("result"), "error": error, "reason": reason}
    return Event(f"run.{run['status']}", None, data)
