"""``Store``: the whole store contract, the union of its capabilities
(``store/contract/``, one protocol each, where every method's contract is written), and
what both backends (Postgres, SQLite) implement. A component that needs a part of the
store names that part's protocol; what needs all of it (the app, the worker) names this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from outlast.store.contract import (
    ActivityStore,
    AssistantStore,
    CronStore,
    EffectStore,
    EventStore,
    ItemStore,
    LangGraphStore,
    LifecycleStore,
    OutboxStore,
    RunStore,
    SecretStore,
    ThreadStore,
    WaitStore,
)
from outlast.store.records import (
    SYSTEM_ASSISTANT_NAMESPACE,
    Assistant,
    Claimant,
    Effect,
    Event,
    EventDraft,
    EventLender,
    HeldRun,
    Lease,
    Lent,
    LgRun,
    ListCursor,
    NewRun,
    Reaped,
    Run,
    Sealed,
    Thread,
    ThreadExpiry,
    Wait,
    WaitSpec,
    same_request,
    system_assistant_id,
    thread_refused,
)

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

# The records live in store/records.py; every ``from outlast.store.base import …`` of
# them keeps working.
__all__ = [
    "SYSTEM_ASSISTANT_NAMESPACE",
    "Assistant",
    "Claimant",
    "Effect",
    "Event",
    "EventDraft",
    "EventLender",
    "HeldRun",
    "Lease",
    "Lent",
    "LgRun",
    "ListCursor",
    "NewRun",
    "Reaped",
    "Run",
    "Sealed",
    "Store",
    "Thread",
    "ThreadExpiry",
    "Wait",
    "WaitSpec",
    "same_request",
    "system_assistant_id",
    "thread_refused",
]


class Store(
    LifecycleStore,
    RunStore,
    EventStore,
    WaitStore,
    ThreadStore,
    ActivityStore,
    EffectStore,
    OutboxStore,
    SecretStore,
    AssistantStore,
    LangGraphStore,
    ItemStore,
    CronStore,
):
    """Backend-neutral operations. Implementations keep their SQL in ``store/sql/<backend>``.
    Not a protocol itself: a backend is a ``Store`` because it says so."""

    # LangGraph's own item store (store/items.py), opened by ``open()``; set by backends.
    _items: BaseStore | None = None

    @property
    def items(self) -> BaseStore:
        if self._items is None:
            raise RuntimeError(f"{type(self).__name__}.open() was not called (no item store)")
        return self._items
