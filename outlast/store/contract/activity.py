"""What a run does now (activity), what it consumed (usage), what the supervisor
remembers of it, and the budget it may spend: fenced writes of the lease holder that
append nothing and wake nobody (the worker appends the events). Written once for both
backends in ``store/run_ops.py``."""

from __future__ import annotations

import abc
from typing import Any, Protocol

from outlast.store.records import Lease


class ActivityStore(Protocol):
    @abc.abstractmethod
    async def set_activity(
        self, lease: Lease, activity: dict[str, Any] | None, usage: dict[str, Any] | None = None
    ) -> None:
        """Record what the run does now and, when given, its budget usage (``None``
        keeps the stored usage). Fenced; no event (the worker appends ``activity``
        itself) and no notification: it is polled, and too frequent to wake anyone."""

    @abc.abstractmethod
    async def set_supervision(self, lease: Lease, supervision: dict[str, Any]) -> None:
        """Record what the supervisor remembers about the run between attempts (fenced)."""

    @abc.abstractmethod
    async def apply_budget(
        self, lease: Lease, budget: dict[str, Any], consumed_wait: str | None
    ) -> None:
        """New limits (a tranche granted by a person) and the budget wait that granted
        them, consumed (answered → resumed) in the same transaction so a tranche is never
        applied twice. Fenced; no event, no notification."""
