"""A thread's runs read one after the other: every stream of a whole thread walks it here.

Runs of a thread execute one at a time, in acceptance order (``Run.pos``), and each has a
durable, ordered log, so the thread's history is their logs concatenated, and a place in
it is ``(pos, seq)``. The walk reads each run's log through ``api.sse.follow_log`` (the
reader every stream shares: replay, then live, with a ``Gap`` where retention pruned what
the cursor points at), goes on to the next run once a run has ended, and waits for runs
that start later. The thread's streams differ only in what they make of the items:
``GET /threads/{t}/stream`` (LangGraph's v1 frames) and the protocol v2 event stream.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

from outlast.api.context import AppContext
from outlast.api.sse import SAFETY_REREAD, Gap, follow_log, follow_run
from outlast.runtime import live
from outlast.store import Event, Run
from outlast.store.hub import THREADS, wait_for


@dataclass(frozen=True, slots=True)
class Begin:
    """The walk reads ``run`` from after ``after`` (0: from its first event)."""

    run: Run
    after: int


@dataclass(frozen=True, slots=True)
class Done:
    """``run`` ended and every event of its log was read; the walk goes on to the next."""

    run: Run


Step = Begin | Event | Gap | Done | live.Follower


async def runs_of(ctx: AppContext, thread_id: str) -> list[Run]:
    """The thread's runs in acceptance order, seen by the calling principal."""
    # the thread was admitted when the walk began: its runs are not asked one by one
    page = await ctx.runs.page(thread_id=thread_id, limit=200, action=None)
    return sorted(page.runs, key=lambda r: r.pos)


async def walk_thread(
    ctx: AppContext,
    thread_id: str,
    start: tuple[int, int],
    max_seconds: float,
    stopping: Callable[[], bool],
    chunks: Callable[[Run], live.Follower | None] = lambda run: None,
) -> AsyncGenerator[Step, None]:
    """Every event of the thread after ``start`` (``(pos, seq)``), run by run, then live,
    until the transport clock (``max_seconds``) or a shutdown (``stopping``). A run that has
    not ended when its log stops (the clock, a shutdown) ends the walk: the client resumes
    from its cursor. ``chunks``: the run's live chunks the caller follows (asked after the
    run's ``Begin``), yielded as the follower when it has some."""
    deadline = time.monotonic() + max_seconds
    pos, seq = start
    with ctx.store.hub.watch(THREADS, thread_id) as accepted:
        while time.monotonic() < deadline and not stopping():
            accepted.clear()  # before the read: an acceptance after it still wakes us
            runs = await runs_of(ctx, thread_id)
            # the run a cursor sits in goes on while it is in flight, even with nothing
            # new in its log yet (its live chunks come before its next event)
            pending = [
                r
                for r in runs
                if (r.pos, r.last_seq) > (pos, seq) or (r.pos == pos and not r.terminal)
            ]
            if not pending:
                # A run accepted on the thread wakes us (``THREADS``, from any process on
                # Postgres; SQLite accepts in the serving process); the re-read at the
                # safety interval is for a notice lost while a listener reconnected.
                left = deadline - time.monotonic()
                await wait_for(accepted, max(min(SAFETY_REREAD, left), 0))
                continue
            for run in pending:
                after = seq if run.pos == pos else 0
                yield Begin(run, after)
                follower = chunks(run)
                left = deadline - time.monotonic()
                log = (
                    follow_log(ctx.store, run.id, after, left, stopping)
                    if follower is None
                    else follow_run(ctx.store, run.id, after, left, stopping, None, follower)
                )
                async with contextlib.aclosing(log) as items:
                    async for item in items:
                        yield item
                current = await ctx.store.get_run(run.id)
                if current is None or not current.terminal:
                    return  # the transport clock or a shutdown: the client resumes from its id
                pos, seq = run.pos, current.last_seq
                yield Done(current)
