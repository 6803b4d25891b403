"""A store's life: connecting, migrating, health, and the LangGraph savers it hands out
over its connections once open."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Protocol

from outlast.store.records import EventLender, Lease

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver


class LifecycleStore(Protocol):
    backend: str  # "postgres" or "sqlite"

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (pools, the Postgres listener, the item store) without changing the
        schema; opening an open store does nothing. StoreUnavailable when it cannot."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release every connection; the store cannot be used again until ``open``."""

    @abc.abstractmethod
    async def migrate(self) -> list[str]:
        """Apply pending migrations (outlast's, the saver's, the item store's); returns
        the names applied, ``[]`` when up to date. Safe to run concurrently: several
        ``serve`` processes may start at once."""

    @abc.abstractmethod
    async def ping(self) -> None:
        """Raise StoreUnavailable when the database does not answer (health checks)."""

    # Whether checkpoint writes can carry the run's pending events (``checkpointer``'s
    # ``events``): then a sink holds a step's events a moment for them.
    carries_events: bool = False

    @abc.abstractmethod
    def checkpointer(
        self, lease: Lease | None = None, events: EventLender | None = None
    ) -> BaseCheckpointSaver[Any]:
        """A LangGraph saver for one run over the shared connections; with a lease, its
        writes are fenced like every other worker write (where the backend can: Postgres;
        SQLite keeps checkpoints in another file, so no transaction covers both), and
        with ``events`` they append the run's pending events in their own transaction
        (where ``carries_events``). Without a lease (the API) it reads and deletes."""
