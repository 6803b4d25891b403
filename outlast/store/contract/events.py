"""The event log: fenced appends with the run's next seqs, reads, and retention (written
once in ``store/event_ops.py``, but ``append``: one statement on Postgres, a ``BEGIN
IMMEDIATE`` block on SQLite)."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Protocol

from outlast.store.hub import Notifying
from outlast.store.records import Event, EventDraft, Lease


class EventStore(Notifying, Protocol):
    @abc.abstractmethod
    async def append(
        self, lease: Lease, events: Sequence[EventDraft], token: str | None = None
    ) -> int:
        """Append events with the next seqs (no holes, one batch contiguous); returns the
        last seq. Fenced; ValueError for an empty batch. Notifies EVENTS.

        ``token`` (a UUID) names the batch: sent again with the same token after an
        error that left its outcome unknown (the connection broke after the commit), the
        batch is not appended a second time, and the run's last seq is returned. A store
        whose commit cannot succeed unseen (SQLite, in the process) may ignore it."""

    @abc.abstractmethod
    async def read_events(self, run_id: str, after: int, limit: int) -> list[Event]:
        """Up to ``limit`` retained events with ``seq > after``, in seq order; ``[]`` for
        an unknown run. Pruned seqs are simply absent: callers compare the first seq
        they get with ``first_retained_seq`` to tell a gap."""

    @abc.abstractmethod
    async def first_retained_seq(self, run_id: str) -> int | None:
        """Lowest seq still stored for the run; None when nothing is retained."""

    @abc.abstractmethod
    async def prune_events(self, run_id: str, upto_seq: int) -> int:
        """Delete events with ``seq <= upto_seq`` (retention); returns how many. The
        run's ``last_seq`` stays, so later appends continue after the gap."""

    @abc.abstractmethod
    async def prune(self, *, keep: int, max_age: float) -> None:
        """Retention: keep at most ``keep`` events per run and none older than ``max_age``
        seconds. Streams that asked for pruned events get a ``gap``, never a silent jump.
        No event, no notification."""
