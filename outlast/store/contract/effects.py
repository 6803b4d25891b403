"""The effects ledger's part of the store: one row per side effect of a run, and one per
compensation (an undoing is an effect of its own, keyed ``undo:<key>``, naming in
``compensates`` the effect it undoes). Written once for both backends in
``store/ledger_ops.py``.

Silent: a worker writes its own run's ledger and appends the ``effect.*`` events itself;
the ledger is what a successor reads after a crash. Fenced where a call follows: a worker
that lost its run (partitioned from the database past its lease, frozen, taken over)
starts no effect, because ``effect_begin`` and ``effect_retry`` given the lease refuse
with ``LeaseLost`` once another holds the run (its other writes are refused already; a
call needs ``started`` committed first). Recording how a call ended is not fenced: what
happened must be written, whoever holds the run now. The other fenced write is
``set_ending``: the decision that a run owing compensations (or a rollback) is ending,
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
        lease: Lease | None = None,
    ) -> tuple[Effect, bool]:
        """Record ``started`` (committed before the call leaves the process);
        ``(existing, False)``, unchanged, when the key is already in the ledger.
        ``compensate``: the import path of the function that undoes it; ``compensates``:
        on an undoing, the key of the effect it undoes. ``lease``: fenced (LeaseLost, and
        nothing recorded, unless the lease is held)."""

    @abc.abstractmethod
    async def effect_retry(self, run_id: str, key: str, lease: Lease | None = None) -> Effect:
        """Start a recorded effect again: ``started``, ``calls + 1``, error cleared.
        ``lease``: fenced, as ``effect_begin``."""

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
