"""Waits and signals: a run parked at its interrupts, the answers and signals that requeue
it, and the wakers that end the waits that come due by themselves (timers, deadlines,
probes). Written once for both backends in ``store/wait_ops.py`` (``park``:
``store/park_ops.py``)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Protocol

from outlast.store.hub import Notifying
from outlast.store.records import EventDraft, Lease, Wait, WaitSpec
from outlast.vocabulary import RunStatus


class WaitStore(Notifying, Protocol):
    @abc.abstractmethod
    async def park(
        self,
        lease: Lease,
        specs: Sequence[WaitSpec],
        lookback: float,
        events: Sequence[EventDraft] = (),
    ) -> RunStatus:
        """Record the waits of a run that stopped at interrupts and release it (fenced;
        the attempt is given back, the epoch bumped). Returns the status it ended in:
        ``waiting`` (``run.waiting``: ``status``, ``waits``, ``kinds``), ``queued`` at
        once when an answer is already there (``run.queued``; an event wait whose key was
        signalled within ``lookback`` seconds is answered here), or, when the run was
        cancelling (its ending not recorded), ``cancelled`` (``run.cancelled``, its waits
        withdrawn), unless it owes work at its end (compensations, a rollback): then
        ``cancelling`` with no worker and its ending recorded (``run.released``), for the
        claim to hand on (``store/transitions.py:park``). ``events`` (the stream parts
        that show the interrupts) are appended in the same transaction, before each new
        wait's ``wait.started`` (``wait``: ``Wait.public()``): a client that sees an
        interrupt can answer it at once, because its wait exists by then. A wait still
        pending from before (same interrupt id) is kept, not duplicated; answers the
        graph consumed become ``resumed``. Notifies EVENTS, STATUS; QUEUE unless waiting;
        WAITS when a spec has a wake time (wakers re-plan their nap)."""

    @abc.abstractmethod
    async def answer(
        self, run_id: str, wait_id: str, value: Any, how: str = "input", key: str | None = None
    ) -> tuple[Wait, bool]:
        """Answer an open wait and requeue its run if it is waiting: ``wait.ended``
        (``wait_id``, ``kind``, ``how``, ``value``; an auth value is redacted) and
        ``run.queued``; notifies EVENTS, and QUEUE and STATUS when requeued. Of
        concurrent answers exactly one lands. WaitNotFound for a wait not of this run,
        WaitNotOpen when already answered. With the ``key`` of an answer already given,
        the same answer again is a replay: ``(wait, False)``, nothing written; another
        value under that key is IdempotencyKeyReused."""

    @abc.abstractmethod
    async def get_wait(self, run_id: str, wait_id: str) -> Wait:
        """The wait; WaitNotFound unless it is this run's."""

    @abc.abstractmethod
    async def list_waits(self, run_id: str, status: str | None = None) -> list[Wait]:
        """The run's waits (of one ``WaitStatus`` if given), oldest first."""

    @abc.abstractmethod
    async def open_waits(self, run_ids: Sequence[str]) -> dict[str, list[Wait]]:
        """The open waits of each of ``run_ids`` (runs without one are absent), in one read:
        a listing asks once per page, never once per row."""

    @abc.abstractmethod
    async def signal(self, key: str, payload: Any, principal: str = "") -> list[str]:
        """Store the signal (for the lookback of waits parked later), then answer every
        open event wait on ``key`` of the sender's runs, as ``answer`` does with
        ``how="signal"`` and value ``{"key", "payload"}``; returns the runs woken,
        ``[]`` when none waits. Another principal's runs never see it."""

    # -- the wakers ----------------------------------------------------------------------

    @abc.abstractmethod
    async def due_waits(self, limit: int, hold: float) -> list[Wait]:
        """Claim up to ``limit`` open waits whose wake time has come (timers, deadlines,
        probes), pushing their wake time ``hold`` seconds ahead so that no other waker
        takes them meanwhile; a waker that dies lets them come due again."""

    @abc.abstractmethod
    async def next_due_in(self) -> float | None:
        """Seconds until the earliest open wait is due (negative when overdue), None when
        no open wait has a wake time: how long a waker may nap."""

    @abc.abstractmethod
    async def wake(self, wait: Wait, value: Any, how: str) -> bool:
        """End a due wait by itself (timer, deadline, probe result) as ``answer`` does;
        False, writing nothing, if it was answered meanwhile."""

    @abc.abstractmethod
    async def probe_ok(self, wait: Wait, every: float, detail: Any) -> None:
        """An external wait's probe says it is still pending: renew the wait's lease for
        ``2 * every``, next probe in ``every``, failures reset; ``wait.renewed``
        (``wait_id``, ``renewals``, ``detail``, ``lease_expires_at``), notifies EVENTS.
        Nothing when the wait is no longer open."""

    @abc.abstractmethod
    async def probe_failed(self, wait: Wait, every: float, error: str) -> int:
        """A probe failed: count it, retry in ``every``; ``wait.probe_failed``
        (``wait_id``, ``failures``, ``error``), notifies EVENTS. Returns the failures so
        far, 0 (nothing written) when the wait is no longer open."""
