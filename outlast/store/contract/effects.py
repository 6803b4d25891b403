"""The effects ledger's part of the store: one row per side effect of a run, and one per
compensation (an undoing is an effect of its own, keyed ``undo:<key>``, naming in
``compensates`` the effect it undoes). Written once for both backends in
``store/ledger_ops.py``.

Not fenced and silent: a worker writes its own run's ledger and appends the ``effect.*``
events itself; the ledger is what a successor reads after a crash. The one fenced write
is ``set_ending``: the decision that a run owing compensations (or a rollback) is ending,
and how, which only the lease holder may take.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

from outlast.store.records import Effect, Lease


class EffectStore(Protocol):
    @abc.abstractmethod
    async def effect_begin(
        self,
        run_id: str,
        key: str,
        tool: str,
        args_hash: str,
        args: Any,
        idempotent: bool,
        *,
        compensate: str | None = None,
        compensates: str | None = None,
    ) -> tuple[Effect, bool]:
        """Record ``started`` (committed before the call leaves the process);
        ``(existing, False)``, unchanged, when the key is already in the ledger.
        ``compensate``: the import path of the function that undoes it; ``compensates``:
        on an undoing, the key of the effect it undoes."""

    @abc.abstractmethod
    async def effect_retry(self, run_id: str, key: str) -> Effect:
        """Start a recorded effect again: ``started``, ``calls + 1``, error cleared."""

    @abc.abstractmethod
    async def effect_finish(
        self, run_id: str, key: str, status: str, result: Any = None, error: str | None = None
    ) -> Effect:
        """Record how the call ended (``done``, ``failed``, ``unknown``) and when."""

    @abc.abstractmethod
    async def list_effects(self, run_id: str) -> list[Effect]:
        """The run's ledger in the order the effects started."""

    @abc.abstractmethod
    async def set_ending(self, lease: Lease, ending: dict[str, Any]) -> dict[str, Any]:
        """Fenced (LeaseLost): the run will end as ``ending`` says (``{"status",
        "error"}``, and ``rollback``, ``compensate``: ``store/transitions.py``) once its
        compensations (and its rollback) are done; returns what was recorded, which the
        holder does: a rollback the run's cancel asked is added to it. From then on a
        reaped or released run goes back to a worker whatever its attempts, and the
        worker that claims it does that work instead of running the graph."""
