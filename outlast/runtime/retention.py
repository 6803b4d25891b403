"""One retention pass, what every worker's retention loop runs each
``retention_interval``: event logs pruned, temporary threads (stateless runs) and threads
past their TTL deleted with their checkpoints (or, under ``keep_latest``, kept with their
latest checkpoints only: the store prunes those itself), expired items swept. The TTL sweeps run
only when due (their lease rows: one sweep per interval across every process).
"""

from __future__ import annotations

from typing import Protocol

from outlast.config import Settings
from outlast.store.contract import EventStore, ItemStore, LangGraphStore, LifecycleStore


class RetentionStore(EventStore, LangGraphStore, ItemStore, LifecycleStore, Protocol):
    """What a retention pass deletes from: logs, threads (and, through the saver, their
    checkpoints), items."""


async def retain(store: RetentionStore, settings: Settings, *, force: bool = False) -> None:
    """``force``: the TTL sweeps now, whatever their leases (a test, an operator)."""
    await store.prune(keep=settings.event_retention_count, max_age=settings.event_retention_age)
    expired = await store.lg_expire_temporary(settings.temporary_thread_ttl)
    # Deleted rows first, then the checkpoints: a run accepted on the thread meanwhile
    # makes the thread anew, and its first checkpoint comes after the claim.
    expired += await store.lg_expire_threads(force=force) or []
    for thread_id in expired:
        await store.checkpointer().adelete_thread(thread_id)
    await store.sweep_items(force=force)
