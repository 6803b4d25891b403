"""Following a LangGraph run: its SSE stream (live, or rejoined from any event id), and
the JSON bodies of ``/wait``, ``/join`` and ``cancel?wait=1``.

Every stream reads the run's durable log through ``api.sse.follow_log`` (the reader both
faces share), from the cursor the client names, so a rejoin after a cut, a restart of the
server or days later gets the events it missed and nothing twice; a cursor older than
retention is told as a ``gap`` (followed by the current ``values`` when the client
streams that mode), never hidden.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from sse_starlette import ServerSentEvent

from outlast.api.context import AppContext
from outlast.api.lg.access import Found, found
from outlast.api.lg.tokens import Tokens, seq_part
from outlast.api.lg.views import error_of
from outlast.api.lg.wire import MESSAGE_MODES, Wire, base_modes, ends_stretch, frame
from outlast.api.lgshared import interrupt_json
from outlast.api.sse import Gap, follow_run
from outlast.errors import OutlastError, UnprocessableRequest
from outlast.jsonable import to_jsonable
from outlast.runtime import live
from outlast.runtime.waits import wait_interrupt
from outlast.service.handle import RunHandle
from outlast.store import RunStatus
from outlast.vocabulary import Frame

_FROM_START = {"", "-1", "-", "0"}
_ID = re.compile(r"^\d{1,18}$")


def cursor_of(last_event_id: str | None, lg_from: int) -> int:
    """``Last-Event-ID`` as a seq of the run's log. ``-1``, ``-``, ``0`` or nothing
    replay the LangGraph run from its start (useStream rejoins with ``-1``); an id this
    server never sends is refused rather than guessed at. (An id of a live chunk,
    ``<seq>.<epoch>.<n>``, is after ``seq``: ``api.lg.tokens``.)"""
    raw = seq_part((last_event_id or "").strip())
    if raw in _FROM_START:
        return lg_from
    if not _ID.match(raw):
        raise UnprocessableRequest(
            f"Last-Event-ID {raw[:40]!r} is not an event id of this server (ids are the "
            "run's event seqs; -1 replays from the start)"
        )
    return max(int(raw), lg_from)


def requested_modes(raw: list[str] | None, fallback: list[str]) -> list[str]:
    """``stream_mode`` on a join, however the client encoded it: repeated keys, a JSON
    array or a comma-separated string (the SDKs differ); none means the run's own."""
    modes: list[str] = []
    for item in raw or []:
        item = item.strip()
        if item.startswith("["):
            with contextlib.suppress(ValueError):
                modes += [str(m) for m in json.loads(item)]
            continue
        modes += [m.strip() for m in item.split(",") if m.strip()]
    return modes or fallback


async def _upper(ctx: AppContext, f: Found) -> int | None:
    """Where this stretch of the log ends at the latest: the next stretch's start."""
    if f.latest:
        return None
    stretches = await ctx.store.lg_runs_of_run(f.run.id)
    later = [s.from_seq for s in stretches if s.from_seq > f.lg.from_seq]
    return min(later) if later else None


def _over_before(f: Found, cursor: int, upper: int | None) -> bool:
    """The client's cursor is already past this LangGraph run's end (a rejoin of a
    finished run): it gets ``end`` at once, never a stream that waits forever."""
    if upper is not None:
        return cursor >= upper
    run = f.run
    ended = run.terminal or (run.status == RunStatus.WAITING and f.asking)
    return ended and cursor >= run.last_seq


async def sse(
    ctx: AppContext,
    f: Found,
    cursor: int,
    modes: list[str],
    subgraphs: bool,
    stopping: Any,
    resume: tuple[int, int] | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """The stream after ``cursor`` (and, with ``resume``, the live chunks the client got
    after it: ``api.lg.tokens``)."""
    wire = Wire(
        run_id=f.lg.id,
        thread_id=f.lg.thread_id,
        graph_id=f.run.graph,
        assistant_id=f.lg.assistant_id,
        modes=base_modes(modes),
        subgraphs=subgraphs,
    )
    if cursor == f.lg.from_seq:  # a reconnect from the middle has had it already
        yield frame("metadata", {"run_id": f.lg.id, "attempt": max(f.run.attempts, 1)}, cursor)
    upper = await _upper(ctx, f)
    if _over_before(f, cursor, upper):
        yield frame("end", {"status": f.run.status.value}, cursor)
        return
    if wire.modes & MESSAGE_MODES and cursor > f.lg.from_seq:
        await prime(ctx, f.run.id, f.lg.from_seq, cursor, wire)
    tokens = Tokens(wire, cursor, resume, lambda: live.progress(f.run.id))
    with contextlib.ExitStack() as stack:
        chunks = None
        # only the run's latest stretch can have chunks still being produced
        if wire.modes & MESSAGE_MODES and upper is None:
            chunks, snap = stack.enter_context(live.follow(f.run.id))
            if snap is not None:
                tokens.joined(snap)
        log = follow_run(
            ctx.store, f.run.id, cursor, ctx.settings.stream_max_seconds, stopping, None, chunks
        )
        async with contextlib.aclosing(log) as items:
            async for item in items:
                if isinstance(item, live.Follower):
                    for fr in tokens.live(item.take()):
                        yield fr
                    continue
                if isinstance(item, Gap):
                    for fr in await _gap(ctx, f, item, wire):
                        yield fr
                    continue
                if upper is not None and item.seq > upper:
                    yield frame("end", None, upper)
                    return
                for fr in tokens.event(item):
                    yield fr
                if ends_stretch(item):
                    return


async def prime(ctx: AppContext, run_id: str, after: int, cursor: int, wire: Wire) -> None:
    """What a client that rejoins at ``cursor`` was sent of the run's model output after
    ``after`` (``Wire.prime``)."""
    while after < cursor:
        events = await ctx.store.read_events(run_id, after, 500)
        for event in events:
            if event.seq > cursor:
                return
            wire.prime(event)
        if len(events) < 500:
            return
        after = events[-1].seq


async def _gap(ctx: AppContext, f: Found, gap: Gap, wire: Wire) -> list[ServerSentEvent]:
    data = {
        "requested_after": gap.requested_after,
        "oldest_available": gap.oldest_available,
        "reason": "events up to this point were pruned by retention",
    }
    frames = [frame(Frame.GAP, data, gap.resume_at)]
    if "values" in wire.modes:
        state = await ctx.threads.state(await ctx.threads.get(f.lg.thread_id))
        frames.append(frame("values", to_jsonable(state.values), gap.resume_at))
    return frames


async def wait_until_over(ctx: AppContext, f: Found) -> Found:
    """Until this LangGraph run is over: the run ended, or it asks a client for something
    (or a later stretch exists). Woken by the run's status changes, as ``/v1`` result is
    (the run handle's states): a ``/wait`` reads no events."""
    async for now in RunHandle(ctx.runs, f.run).states():
        run = now.run
        # only a run that waits can have asked something, or been resumed since
        f = await found(ctx, f.lg, run) if run.status == RunStatus.WAITING else replace(f, run=run)
        if not f.latest or f.run.terminal or (f.run.status == RunStatus.WAITING and f.asking):
            break
    return f


async def final_body(ctx: AppContext, f: Found) -> Any:
    """What ``/wait`` and ``/join`` answer: the state at the end of this LangGraph run,
    with ``__interrupt__`` when it stopped at interrupts, or ``__error__`` when it
    failed (HTTP 200 either way: the SDKs raise on ``__error__``)."""
    run = f.run
    if run.status == RunStatus.FAILED and f.latest:
        return {"__error__": error_of(run.error)}
    if run.status == RunStatus.COMPLETED and f.latest and run.result is not None:
        return run.result
    thread = await ctx.threads.get(f.lg.thread_id)
    state = await ctx.threads.state(thread)
    values = to_jsonable(state.values)
    if (state.interrupts or f.asked) and f.asking:
        body = dict(values) if isinstance(values, dict) else {}
        body["__interrupt__"] = [interrupt_json(i) for i in state.interrupts] + [
            wait_interrupt(w) for w in f.asked
        ]
        return body
    return values


async def keepalive_json(work: asyncio.Task[Any], every: float) -> AsyncIterator[bytes]:
    """``"\\n"`` every few seconds until the body is ready (JSON parsers skip leading
    whitespace, and proxies see bytes moving), then the body."""
    try:
        while True:
            done, _ = await asyncio.wait({work}, timeout=every)
            if done:
                break
            yield b"\n"
        try:
            body = work.result()
        except OutlastError as exc:
            # The status line went out with the first keepalive: what went wrong since
            # (the thread deleted under the wait, say) can only be said in the body, as
            # LangGraph's own ``__error__``, which the SDKs raise on.
            body = {"__error__": {"error": type(exc).__name__, "message": str(exc)}}
        yield json.dumps(body, separators=(",", ":"), default=str).encode()
    finally:
        if not work.done():
            work.cancel()
