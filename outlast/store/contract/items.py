"""LangGraph's own item store on outlast's databases (its implementation, and the
namespace tree per principal, are ``store/items.py``)."""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore


class ItemStore(Protocol):
    @property
    @abc.abstractmethod
    def items(self) -> BaseStore:
        """The ``/store`` items and a graph's ``store``, for every principal at once: hand
        out ``outlast.store.items.for_principal(store.items, principal)``, not this."""

    @abc.abstractmethod
    async def sweep_items(self, *, force: bool = False) -> int | None:
        """Delete expired items (``store.ttl``); how many. None when the sweep is not due:
        it runs once per ``store.ttl.sweep_interval_minutes`` across every process
        (``force``: now, whatever the lease). Expired items are never read meanwhile."""
