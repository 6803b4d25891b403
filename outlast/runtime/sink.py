"""The event sink of one run: ordered, batched, fenced appends.

Events are put synchronously (order is the order of ``put``) and written by one
background task. While a write is in flight new events accumulate and go out together
in the next one, so an idle run pays one round trip per event and a busy run batches
itself, with no timer in the way. A write the fence refuses (``LeaseLost``: the run
belongs to someone else now), or one that still fails after a few retries, stops the
sink and tells the execution (``on_error``), which stops the graph.

Carried events. A store that can (Postgres) lets the run's checkpoint writes carry the
sink's pending events in their own transaction (``lend``/``settle``): a step's
``node.updated`` then costs no round trip and no transaction of its own, and lands
atomically with the checkpoint write that carried it. LangGraph saves a task's writes
a moment *before* it streams the task's update, so the sink holds a batch that ends a
step (``node.updated``, or a kept ``stream`` part) for up to ``carry_window`` seconds,
for the next checkpoint write to take; a batch without one (custom events, model
deltas: what a client watches live) is written at once. One write of the run's events
is in flight at a time, the sink's own or a lent one, so seqs keep the order of ``put``.

The window is wall time, and on a busy event loop (many runs in one process) the step's
checkpoint write comes later than that: every step's events then went out on their own,
one transaction more per step just when the database was busiest. So once the step is
over (``step_over``: no task of the root graph left in flight, so its checkpoint write
is next), the hold lasts until that write takes the events, or ``due_hold`` at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from outlast.cancelling import cancel_and_wait
from outlast.store import EventDraft, EventStore, Lease, Lent
from outlast.store.outage import ride_out
from outlast.store.rows import dumps
from outlast.vocabulary import EventType

log = logging.getLogger(__name__)

# an append that failed other than as the database does (store/outage.py): five in all
_OTHER_ATTEMPTS = 5
# Events that end a step: a checkpoint write follows them closely (``stream``: the state
# after a step a LangGraph client asked for, emitted as the next step's writes go out).
_STEP_ENDS = frozenset({EventType.NODE_UPDATED, EventType.STREAM})
# The longest a finished step's events wait for its checkpoint write: far more than a
# step's bookkeeping takes even with a hundred runs on one loop, and short enough that a
# write that never comes (a graph that stopped between the step and its checkpoint
# without a flush) delays a live client by no more than this.
DUE_HOLD = 1.0


class SinkClosed(Exception):
    pass


class EventSink:
    def __init__(
        self,
        store: EventStore,
        lease: Lease,
        on_error: Callable[[BaseException], None],
        max_bytes: int = 256_000,
        carry_window: float = 0.0,
        due_hold: float = 0.0,
    ) -> None:
        self._max_bytes = max_bytes
        self._store = store
        self._lease = lease
        self._on_error = on_error
        self._buffer: list[EventDraft] = []
        # A lent batch whose write failed: stored or not, nobody knows (the connection
        # may have broken after the commit). It goes again first, as it was, with its
        # token, which the store finds if the first write did commit.
        self._unsure: Lent | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._busy = False  # a write of this run's events is in flight (own or lent)
        self._changed = asyncio.Event()  # what a hold waits on: a put, lend, settle, flush
        self._cut = False  # someone waits for the events (flush): no holding back
        self.carry_window = carry_window
        # How long the events of a finished step wait for its checkpoint write at most:
        # a safety net, the write follows the step however loaded the loop; 0 when none
        # follows (durability "exit", or no carrying at all).
        self.due_hold = due_hold if carry_window > 0 else 0.0
        self._due = False  # the pending events end a step that is over
        self.error: BaseException | None = None
        self.last_seq = 0
        self.writes = 0  # the sink's own appends
        self.carried = 0  # batches that rode in a checkpoint write
        self._task = asyncio.create_task(self._loop(), name=f"outlast-sink-{lease.run_id}")

    def put(self, draft: EventDraft) -> None:
        if self.error is not None:
            raise SinkClosed(str(self.error)) from self.error
        self._buffer.append(_bounded(draft, self._max_bytes))
        self._idle.clear()
        self._wake.set()
        self._changed.set()

    @property
    def settled(self) -> bool:
        """Everything put so far is stored, at or before ``last_seq``."""
        return self._idle.is_set() and self.error is None

    def step_over(self) -> None:
        """The step the pending events end is over: its checkpoint write comes next, so
        they wait for it (``due_hold`` at most) however long a busy loop takes."""
        if self.due_hold > 0 and self._ends_step():
            self._due = True
            self._changed.set()

    async def flush(self) -> None:
        """Wait until everything put so far is stored (or the sink failed)."""
        if not self._idle.is_set():
            self._cut = True  # no holding back what someone waits for
            self._changed.set()
        await self._idle.wait()
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        with contextlib.suppress(BaseException):
            await self.flush()
        await cancel_and_wait(self._task)

    # -- carried by checkpoint writes --------------------------------------------------

    def lend(self) -> Lent | None:
        """The pending events, for a write about to go out that will append them in its
        own transaction; None when there are none or a write of them is in flight (or
        one whose outcome is unknown must go again first). The borrower must call
        ``settle`` with the outcome."""
        if self._busy or self._unsure or not self._buffer or self.error is not None:
            return None
        self._busy = True
        self._due = False
        batch, self._buffer = self._buffer, []
        self._changed.set()
        return Lent(batch, str(uuid.uuid4()))

    def settle(self, lent: Lent, seq: int | None) -> None:
        """The lent batch was stored with its last event at ``seq``, or (None) its write
        failed, having stored it or not: then the sink writes it again, as it was and
        ahead of newer events, with its token (or fails on it, with the error the
        execution must see)."""
        self._busy = False
        if seq is None:
            self._unsure = lent
            self._cut = True  # write them now (or fail on them), no more waiting
        else:
            self.last_seq = seq
            self.carried += 1
        self._changed.set()
        if self._buffer or self._unsure:
            self._wake.set()
        else:
            self._set_idle()

    # -- the sink's own writes ---------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self.carry_window > 0 and self._ends_step():
                await self._hold()
            while (self._buffer or self._unsure) and not self._busy:
                self._busy = True
                self._due = False
                if self._unsure is not None:
                    batch, token = self._unsure.events, self._unsure.token
                    self._unsure = None
                else:
                    batch, token = self._buffer, str(uuid.uuid4())
                    self._buffer = []
                try:
                    self.last_seq = await self._write(batch, token)
                except Exception as exc:
                    self.error = exc
                    self._set_idle()
                    self._on_error(exc)
                    return
                finally:
                    self._busy = False
            if not self._buffer and not self._unsure and not self._busy:
                self._set_idle()

    def _set_idle(self) -> None:
        self._cut = False
        self._idle.set()

    async def _hold(self) -> None:
        """Until a checkpoint write took the pending events, or they should wait no more:
        a flush, the window gone by (unless their step is over and they are all step
        events: then ``due_hold`` more). Conditions are looked at again at every put,
        lend, settle and flush; a lent write of earlier events settling is not this
        batch being carried."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        while self._buffer and not self._cut:
            limit = start + self.carry_window
            if self._due and not self._live():
                limit += self.due_hold
            if loop.time() >= limit:
                return
            self._changed.clear()
            # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancel that arrives
            # as the wait completes (close() does both), and the task hangs
            try:
                async with asyncio.timeout_at(limit):
                    await self._changed.wait()
            except TimeoutError:
                return

    def _ends_step(self) -> bool:
        return any(d.type in _STEP_ENDS for d in self._buffer)

    def _live(self) -> bool:
        return any(d.type not in _STEP_ENDS for d in self._buffer)

    async def _write(self, batch: list[EventDraft], token: str) -> int:
        async def append() -> int:
            seq = await self._store.append(self._lease, batch, token)
            self.writes += 1
            return seq

        # The same batch goes again with the same token, through a restart of the
        # database too: if a failed write did commit (its answer was lost with the
        # connection), the store finds the token and appends nothing twice.
        return await ride_out(
            append, f"event append for {self._lease.run_id}", other_attempts=_OTHER_ATTEMPTS
        )


def _bounded(draft: EventDraft, max_bytes: int) -> EventDraft:
    """An event too large for the log (a node returning a huge state) is kept as a
    marker with its size and a preview: every client pays for every event, again on each
    replay, and the full value is in the checkpoint anyway."""
    raw = dumps(draft.data)  # as the store writes it: kept, so it is encoded once
    if len(raw.encode()) <= max_bytes:
        return EventDraft(draft.type, draft.data, raw)
    preview = raw[: min(2000, max_bytes // 4)]
    marker = {"truncated": True, "bytes": len(raw.encode()), "preview": preview}
    for key in ("node", "ns", "key", "tool", "status"):
        if key in draft.data:
            marker[key] = draft.data[key]
    return EventDraft(draft.type, marker)
