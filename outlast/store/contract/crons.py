"""Crons: runs made on a schedule (the LangGraph face's ``client.crons``), and the durable
scheduler's side of them. Written once for both backends in ``store/cron_ops.py``.

A cron belongs to the principal that made it: every method of the face's side names the
principal, and another principal's cron does not exist for it (``CronNotFound``). A
thread's crons are deleted with the thread.

The scheduler's side fires each tick once however many processes run it: ``claim_crons``
takes due crons under ``FOR UPDATE SKIP LOCKED`` (SQLite: its one writer), records the
tick it fires (``firing_at``) and moves the cron to its next tick in the same
transaction; ``cron_fired`` records the tick as fired once its run was accepted. A tick
claimed by a process that died before ``cron_fired`` is claimed again ``hold`` seconds
later and fired with the same idempotency key (``Tick.key``), so it gets the run the
first claim may have made, never a second one. Times are the database's.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Protocol

from outlast.store.crons import Cron, CronQuery, NewCron, Tick
from outlast.store.hub import Notifying


class CronStore(Notifying, Protocol):
    @abc.abstractmethod
    async def create_cron(self, cron: NewCron) -> Cron:
        """Insert it, due at its schedule's first tick after now (``store/schedule.py``;
        None when that is past ``end_time``). Notifies CRONS (schedulers re-plan)."""

    @abc.abstractmethod
    async def get_cron(self, cron_id: str, principal: str | None = "") -> Cron | None:
        """The principal's cron, or None (also when another principal owns it)."""

    @abc.abstractmethod
    async def update_cron(
        self, cron_id: str, changes: Mapping[str, Any], principal: str | None = ""
    ) -> Cron:
        """Change the fields named in ``changes`` (``crons.UPDATABLE``; ``metadata`` and
        ``payload`` are merged into the current ones by top-level key, the others replace
        theirs). A change of the
        schedule, time zone, end time or ``enabled`` (to another value) re-plans the next
        tick from now (a
        cron enabled again does not catch up on the ticks it missed while disabled); a
        tick being fired is left to its scheduler. ``CronNotFound`` for a cron the
        principal does not have. Notifies CRONS."""

    @abc.abstractmethod
    async def delete_cron(self, cron_id: str, principal: str | None = "") -> None:
        """Delete the principal's cron, or ``CronNotFound``."""

    @abc.abstractmethod
    async def search_crons(
        self,
        query: CronQuery,
        *,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> list[Cron]:
        """One page of the crons ``query`` means; ``sort_by`` is one of
        ``crons.SORT_FIELDS`` (ties by id, ascending)."""

    @abc.abstractmethod
    async def count_crons(self, query: CronQuery) -> int:
        """How many of the principal's crons ``search_crons`` would find."""

    @abc.abstractmethod
    async def claim_crons(self, limit: int, hold: float) -> list[Tick]:
        """Up to ``limit`` ticks to fire now, of any principal: crons due (enabled,
        ``next_run_at`` passed) and ticks claimed more than ``hold`` seconds ago and
        not recorded as fired. A due cron fires its latest tick by now (the catch-up
        policy: ``schedule.plan``) and is due next at its first tick after now; a cron
        whose tick is past its ``end_time`` fires nothing and is never due again. Rows
        locked by another claimer are skipped, never waited for."""

    @abc.abstractmethod
    async def cron_fired(self, tick: Tick) -> None:
        """Record ``tick`` as fired (its run was accepted, or refused for good), unless
        the cron has moved on to another tick or is gone."""

    @abc.abstractmethod
    async def next_cron_in(self) -> float | None:
        """Seconds until ``claim_crons`` has something to take (≤ 0: now); None when no
        cron will ever be due."""
