"""Activity leases: what a running run is doing now, and whether it is still alive.

Each node in flight is an activity with a lease of ``activity_lease_ttl`` seconds that
every sign of life renews: ``outlast.nodes.heartbeat()`` / ``progress()``, and streamed
model tokens. Health is read off the lease: ``live`` while signals are recent (within
half the lease), ``silent`` until the lease runs out, ``stalled`` after. A lease runs out
a lease after the last sign of life, or at the end of the supervisor's last renewal,
whichever is later (``runtime/looks.py``). An expired lease never kills anything by
itself; it is the supervisor's trigger (``supervisor/ladder.py``).

What the snapshot shows is written to the run row at a bounded rate (at most once per
``activity_flush_interval``), and so are ``activity`` events: a thousand heartbeats are a
handful of writes. Times come from the worker's clock; leases are measured on its
monotonic clock, so a clock step never expires or extends one.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from outlast.cancelling import cancel_and_wait
from outlast.errors import LeaseLost
from outlast.runtime import metrics
from outlast.runtime.looks import Activity
from outlast.runtime.outcomes import store_failure
from outlast.runtime.sink import EventSink, SinkClosed
from outlast.store import ActivityStore, EventDraft, Lease

log = logging.getLogger(__name__)


class ActivityTracker:
    def __init__(
        self,
        store: ActivityStore,
        lease: Lease,
        sink: EventSink,
        *,
        ttl: float,
        flush_interval: float,
        usage: Callable[[], dict[str, Any]] | None = None,
        on_expired: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None,
        max_expected: float = 86_400.0,
    ) -> None:
        self._store = store
        self._lease = lease
        self._sink = sink
        self._ttl = ttl
        self._usage = usage
        self._on_expired = on_expired
        self._max_expected = max_expected
        self._supervisions: set[asyncio.Task[None]] = set()
        self._interval = flush_interval
        self._acts: dict[str, Activity] = {}
        self._written: dict[str, Any] | None = None
        self._dirty = asyncio.Event()
        self._task = asyncio.create_task(self._loop(), name=f"outlast-activity-{lease.run_id}")

    # -- signals (synchronous: they come from the stream loop) ------------------------

    def start(self, key: str, name: str, kind: str = "node") -> None:
        self._acts[key] = Activity.begin(kind, name, dt.datetime.now(dt.UTC), time.monotonic())
        self._dirty.set()

    def end(self, key: str) -> None:
        if self._acts.pop(key, None) is not None:
            self._dirty.set()

    def signal(
        self,
        key: str | None,
        kind: str,
        note: str | None = None,
        fraction: float | None = None,
        probe: str | None = None,
        expected: float | None = None,
    ) -> None:
        act = self._acts.get(key) if key else self._latest()
        if act is None:
            return
        if expected is not None:  # a declaration, not a blank cheque
            expected = min(float(expected), self._max_expected)
        act.sign(
            dt.datetime.now(dt.UTC),
            time.monotonic(),
            note=note,
            fraction=fraction,
            probe=probe,
            expected=expected,
        )
        metrics.ACTIVITY_RENEWALS.labels(source=kind).inc()
        if kind == "model" and act.kind == "node":
            act.kind = "model"
        self._dirty.set()

    def _latest(self) -> Activity | None:
        return max(self._acts.values(), key=lambda a: a.last_signal_mono, default=None)

    # -- what the snapshot shows -------------------------------------------------------

    def health(self, act: Activity) -> str:
        now = time.monotonic()
        if now - act.last_signal_mono <= self._ttl / 2:
            return "live"
        return "silent" if now <= act.deadline(self._ttl) else "stalled"

    def view(self) -> dict[str, Any] | None:
        act = self._latest()
        if act is None:
            return None
        expires = act.lease_expires_at(self._ttl)
        return {
            "kind": act.kind,
            "name": act.name,
            "started_at": act.started_at.isoformat(),
            "last_signal_at": act.last_signal_at.isoformat(),
            "lease_expires_at": expires.isoformat(),
            "renewals": act.renewals,
            "health": self.health(act),
            "note": act.note,
            "fraction": act.fraction,
            "in_flight": len(self._acts),
        }

    # -- the supervisor's side ----------------------------------------------------------

    def _check_expiries(self) -> None:
        if self._on_expired is None:
            return
        for act in list(self._acts.values()):
            if not act.supervising and self.health(act) == "stalled":
                act.supervising = True
                metrics.ACTIVITY_EXPIRIES.inc()
                task = asyncio.create_task(self._supervise(act))
                self._supervisions.add(task)
                task.add_done_callback(self._supervisions.discard)

    async def _supervise(self, act: Activity) -> None:
        """An expired lease wakes the supervisor; only its verdict acts, never the expiry."""
        assert self._on_expired is not None
        try:
            answer = await self._on_expired(act.look(time.monotonic()))
        except BaseException:
            act.supervising = False  # no verdict: the next expiry check asks again
            raise
        act.settle(answer, time.monotonic(), self._ttl)
        if answer.get("verdict") == "renew":
            act.supervising = False
            metrics.ACTIVITY_RENEWALS.labels(source="supervisor").inc()
            self._dirty.set()
        # Any other verdict stops the node. It stays "being supervised" while it stops, so
        # the still-expired lease is not judged again (a slow stop gave a second verdict).

    # -- bounded-rate writes -----------------------------------------------------------

    async def _loop(self) -> None:
        await self._dirty.wait()
        while True:
            # Coalesce first: a run whose nodes finish within the interval never writes
            # an activity at all. Health changes with time alone (live → silent →
            # stalled), so look again at least every quarter lease.
            await asyncio.sleep(min(self._interval, self._ttl / 4))
            self._dirty.clear()
            self._check_expiries()
            await self._write()

    async def _write(self) -> None:
        view = self.view()
        comparable = (
            None
            if view is None
            else {k: v for k, v in view.items() if k not in ("last_signal_at", "lease_expires_at")}
        )
        if comparable == self._written:
            return
        self._written = comparable
        try:
            await self._store.set_activity(
                self._lease, view, self._usage() if self._usage else None
            )
        except LeaseLost:  # the sink and the heartbeat report it
            pass
        except Exception as exc:
            if not store_failure(exc):
                raise
            # A full disk, a database gone: the run's own writes stop it (the sink's,
            # the checkpoint's); an activity is only what it was doing, and is written
            # again at the next look if the store is back by then.
            log.warning("activity of %s not written (%s)", self._lease.run_id, exc)
            self._written = None
            return
        if view is not None:
            with contextlib.suppress(SinkClosed):
                self._sink.put(EventDraft("activity", view))

    async def close(self) -> None:
        for task in list(self._supervisions):
            task.cancel()
        await cancel_and_wait(self._task)
