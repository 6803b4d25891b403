"""A thread's protocol events from a cursor: what both transports (SSE and the WebSocket)
send, read from the durable run logs.

The thread is walked run by run (``api/lg/walk.py``), each run's events translated
(``translate.py``) and numbered by their place, ``Position(run pos, seq, index)``, which
is both the event's ``seq`` and its ``event_id``: a client that comes back with the last
``seq`` it saw as ``since`` gets exactly the events after it, from any process, after any
restart. Where retention pruned what the cursor points at, the stream says so (an
unsolicited ``resume_gap`` error with ``min_available_seq``) and sends the thread's current
``values`` before going on: never a silent hole. When the run a ``messages`` stream reads
executes in this process, its model chunks also go out live, between stored events, with
places of their own (``tokens.py``, ``cursor.py``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from outlast.api.context import AppContext
from outlast.api.protocol.cursor import SUB_MAX, Position
from outlast.api.protocol.tokens import Tokens
from outlast.api.protocol.translate import Part, RunTranslator
from outlast.api.sse import Gap
from outlast.api.thread_walk import Begin, Done, runs_of, walk_thread
from outlast.errors import UnprocessableRequest
from outlast.jsonable import to_jsonable
from outlast.runtime import live
from outlast.store import Event, Run

CHANNELS = frozenset(
    {"values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks"}
    | {"custom"}
)
_CUSTOM = re.compile(r"^custom:.+$")
_PRIME_PAGE = 500
# A client that starts a run and then subscribes without a cursor (the SDKs' lifecycle
# watcher does) may connect after a short run has ended: a run that ended this recently
# is still the thread's current run.
RECENT = dt.timedelta(seconds=30)
# The protocol's clients take a stream that ends as the end of the run, so the server
# never ends one on a clock of its own (only a shutdown does); heartbeats keep it open.
FOREVER = 10.0 * 365 * 24 * 3600


@dataclass(frozen=True, slots=True)
class Filter:
    """What a subscription asks for: channels, namespace prefixes and a depth below them
    (matched as LangGraph's SDKs match them: a prefix segment without ``:`` also matches
    a segment with its task id)."""

    channels: frozenset[str]
    namespaces: tuple[tuple[str, ...], ...] | None = None
    depth: int | None = None

    def admits(self, part: Part) -> bool:
        channel = _channel(part)
        if channel not in self.channels and not (
            channel.startswith("custom:") and "custom" in self.channels
        ):
            return False
        if not self.namespaces:
            return True
        return any(self._under(part.namespace, prefix) for prefix in self.namespaces)

    def _under(self, namespace: list[str], prefix: tuple[str, ...]) -> bool:
        if len(prefix) > len(namespace):
            return False
        for want, have in zip(prefix, namespace, strict=False):
            if want != have and (":" in want or have.split(":", 1)[0] != want):
                return False
        return self.depth is None or len(namespace) - len(prefix) <= self.depth


def _channel(part: Part) -> str:
    if part.method == "input.requested":
        return "input"
    if part.method == "custom":
        name = part.data.get("name") if isinstance(part.data, dict) else None
        return f"custom:{name}" if name else "custom"
    return part.method


def parse_request(body: Any) -> tuple[Filter, int | None]:
    """An ``EventStreamRequest`` (or ``subscription.subscribe``'s params): its filter and
    ``since``. Unknown fields are ignored, as the face ignores them everywhere."""
    if not isinstance(body, dict):
        raise UnprocessableRequest("the body must be an object with `channels`")
    channels = body.get("channels")
    if not isinstance(channels, list) or not channels:
        raise UnprocessableRequest("`channels` must be a non-empty list of channel names")
    for channel in channels:
        if not isinstance(channel, str) or not (channel in CHANNELS or _CUSTOM.match(channel)):
            raise UnprocessableRequest(f"unknown channel {str(channel)[:60]!r}")
    namespaces = body.get("namespaces")
    if namespaces is not None and not (
        isinstance(namespaces, list)
        and all(isinstance(ns, list) and all(isinstance(s, str) for s in ns) for ns in namespaces)
    ):
        raise UnprocessableRequest("`namespaces` must be a list of namespaces (lists of strings)")
    depth, since = body.get("depth"), body.get("since")
    for name, value in (("depth", depth), ("since", since)):
        if value is not None and (type(value) is not int or value < 0):
            raise UnprocessableRequest(f"`{name}` must be a non-negative integer")
    if since is not None:
        try:
            Position.unpacked(since)
        except ValueError:
            raise UnprocessableRequest(f"`since` {since} is not a cursor of this server") from None
    spaces = tuple(tuple(ns) for ns in namespaces) if namespaces is not None else None
    return Filter(frozenset(channels), spaces, depth), since


async def start_of(
    ctx: AppContext, thread_id: str, since: int | None
) -> tuple[tuple[int, int], int]:
    """Where the walk starts (``(pos, seq)`` after which it reads) and the cursor at or
    before which nothing is sent.

    With ``since``: right after it. The stored event the cursor sits in is read again
    (the cursor may point in the middle of the events it became) unless it was the last.
    Without: the thread's current run, from the start of its current stretch (after its
    last resume: the interrupts it asked before are answered), if it is in flight or just
    ended; otherwise what comes next."""
    if since is not None:
        at = Position.unpacked(since)
        after = at.seq if at.sub >= SUB_MAX else max(at.seq - 1, 0)
        return (at.pos, after), since
    runs = await runs_of(ctx, thread_id)
    if not runs:
        return (0, 0), -1
    latest = runs[-1]
    if latest.terminal and not _recent(latest):
        return (latest.pos, latest.last_seq), -1
    stretches = await ctx.store.lg_runs_of_run(latest.id)
    begins = [s.from_seq for s in stretches if s.from_seq <= latest.last_seq]
    return (latest.pos, max(begins, default=0)), -1


def _recent(run: Run) -> bool:
    ended = run.updated_at
    if ended.tzinfo is None:
        ended = ended.replace(tzinfo=dt.UTC)
    return dt.datetime.now(dt.UTC) - ended < RECENT


def envelope(position: Position, at: Any, part: Part) -> dict[str, Any]:
    """A protocol event: its ``seq`` is its place; its ``event_id`` too, but for a model
    chunk's events, which are named by the chunk (``(run pos, epoch, n, index)``) so the
    copy from the log and the one that went live are one event to a client that
    deduplicates by id."""
    seq = position.packed()
    when = at.time if isinstance(at, Event) else dt.datetime.now(dt.UTC)
    params = {
        "namespace": part.namespace,
        "timestamp": int(when.timestamp() * 1000),
        "data": part.data,
    }
    ident = str(seq)
    if part.chunk is not None:
        ident = ".".join(map(str, (position.pos, *part.chunk)))
    return {
        "type": "event",
        "event_id": ident,
        "seq": seq,
        "method": part.method,
        "params": params,
    }


async def thread_events(
    ctx: AppContext,
    thread_id: str,
    since: int | None,
    wanted: Filter,
    stopping: Callable[[], bool],
) -> AsyncGenerator[dict[str, Any], None]:
    """The thread's protocol frames after ``since`` that ``wanted`` admits, then live:
    events (``type: event``) and the gap's error (``type: error``, ``id: null``). A stream
    of the ``messages`` channel also follows the run it reads in this process, when the run
    executes here: its tokens go out as the model makes them (``tokens.py``)."""
    start, floor = await start_of(ctx, thread_id, since)
    at = Position.unpacked(since) if since is not None else None
    tokens: Tokens | None = None
    follower: live.Follower | None = None
    with contextlib.ExitStack() as following:
        steps = walk_thread(ctx, thread_id, start, FOREVER, stopping, lambda run: follower)
        async with contextlib.aclosing(steps) as items:
            async for item in items:
                placed: list[tuple[Position, Part]] = []
                if isinstance(item, Begin):
                    following.close()
                    follower = None
                    translator = RunTranslator(item.run)
                    await _prime(ctx, translator, item.after)
                    mine = at is not None and at.pos == item.run.pos
                    resume = at.chunk() if at is not None and mine else None
                    ready = at.seq if at is not None and mine else 0
                    tokens = Tokens(translator, item.after, resume, ready)
                    if "messages" in wanted.channels and not item.run.terminal:
                        follower = _follow(following, item.run.id)
                elif isinstance(item, Done):
                    following.close()
                    follower = None
                elif isinstance(item, Gap):
                    async for frame in _gap(ctx, thread_id, item, wanted):
                        yield frame
                elif isinstance(item, live.Follower) and tokens is not None:
                    placed = tokens.live(item.take())
                elif isinstance(item, Event) and tokens is not None:
                    placed = tokens.stored(item)
                for position, part in placed:
                    if position.packed() > floor and wanted.admits(part):
                        yield to_jsonable(envelope(position, item, part))


def _follow(stack: contextlib.ExitStack, run_id: str) -> live.Follower:
    """The run's live chunks from now on; those it made before and has not put on the log
    yet are the first (read after the log, as every chunk is)."""
    follower, snap = stack.enter_context(live.follow(run_id))
    if snap is not None:
        follower.chunks.extend(snap.pending)
    return follower


async def _prime(ctx: AppContext, translator: RunTranslator, upto: int) -> None:
    """What the run's log said up to the cursor, so the events after it are translated as
    a reader from the start translated them (a message begun before the cursor goes on)."""
    after = 0
    while after < upto:
        events = await ctx.store.read_events(translator.run.id, after, _PRIME_PAGE)
        for event in events:
            if event.seq > upto:
                return
            translator.parts(event)
        if len(events) < _PRIME_PAGE:
            return
        after = events[-1].seq


async def _gap(
    ctx: AppContext, thread_id: str, gap: Gap, wanted: Filter
) -> AsyncGenerator[dict[str, Any], None]:
    """Retention pruned what the cursor points at: say so, with the first position still
    held and a ``seq`` past the hole, then the thread's state as it is now."""
    at = Position(gap.run.pos, gap.resume_at, SUB_MAX).packed()
    first = Position(gap.run.pos, gap.oldest_available or gap.resume_at + 1, 0).packed()
    yield {
        "type": "error",
        "id": None,
        "error": "resume_gap",
        "message": "events up to this point were pruned by retention; "
        "the thread's current values follow",
        "min_available_seq": first,
        "seq": at,
    }
    snapshot = Part("values", [], None)
    thread = await ctx.runs.owners.thread(thread_id)
    if thread is None or not wanted.admits(snapshot):
        return
    state = await ctx.threads.state(thread)
    params = {"namespace": [], "timestamp": int(dt.datetime.now(dt.UTC).timestamp() * 1000)}
    yield {
        "type": "event",
        "event_id": f"{at}:snapshot",
        "seq": at,
        "method": "values",
        "params": {**params, "data": to_jsonable(state.values)},
    }
