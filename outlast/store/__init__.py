"""The store: runs, their events and leases, on Postgres or the embedded SQLite default.

``Store`` is the whole contract; its capabilities (``RunStore``, ``EventStore``, …:
store/contract/) are what a component that uses a part of it names."""

from __future__ import annotations

from pathlib import Path

from outlast.config import Settings
from outlast.store.base import (
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
    Store,
    Thread,
    Wait,
    WaitSpec,
)
from outlast.store.contract import (
    ActivityStore,
    AssistantStore,
    CronStore,
    EffectStore,
    EventStore,
    ItemStore,
    LangGraphStore,
    LifecycleStore,
    Notifying,
    OutboxStore,
    RunStore,
    SecretStore,
    ThreadStore,
    WaitStore,
)
from outlast.store.options import StoreOptions
from outlast.vocabulary import TERMINAL, RunStatus

__all__ = [
    "TERMINAL",
    "ActivityStore",
    "Assistant",
    "AssistantStore",
    "Claimant",
    "CronStore",
    "Effect",
    "EffectStore",
    "Event",
    "EventDraft",
    "EventLender",
    "EventStore",
    "HeldRun",
    "ItemStore",
    "LangGraphStore",
    "Lease",
    "Lent",
    "LgRun",
    "LifecycleStore",
    "ListCursor",
    "NewRun",
    "Notifying",
    "OutboxStore",
    "Reaped",
    "Run",
    "RunStatus",
    "RunStore",
    "Sealed",
    "SecretStore",
    "Store",
    "Thread",
    "ThreadStore",
    "Wait",
    "WaitSpec",
    "WaitStore",
    "make_store",
]


def make_store(settings: Settings, options: StoreOptions | None = None) -> Store:
    """Postgres when a URL is configured, else SQLite under ``data_dir``. Not opened yet.
    ``options``: what the deployment asks of the stores (``runtime/deployment.py`` reads
    them from ``langgraph.json``); LangGraph's defaults without."""
    options = options or StoreOptions()
    url = settings.database_url
    if url and url.startswith(("postgres://", "postgresql://")):
        from outlast.store.postgres import PostgresStore

        return PostgresStore(
            url,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            options=options,
            dead_peer_timeout=settings.pg_dead_peer_timeout,
        )
    if url and not url.startswith("sqlite:///"):
        raise ValueError(
            f"unsupported database URL {url!r}: use postgresql://… or sqlite:///path/file.db"
        )
    from outlast.store.sqlite import SqliteStore

    if url:
        # sqlite:///rel/file.db is relative, sqlite:////abs/file.db absolute (SQLAlchemy's rule)
        path = Path(url.removeprefix("sqlite:///"))
        return SqliteStore(path, path.with_suffix(".checkpoints.db"), options=options)
    runs, checkpoints = settings.sqlite_paths()
    return SqliteStore(runs, checkpoints, options=options)
