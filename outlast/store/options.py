"""What a deployment asks of its stores beyond a URL: ``langgraph.json``'s ``store`` and
``checkpointer`` sections, as the store layer reads them (``graph/manifest.py`` builds
these from the file; a test builds them directly).

All durations are in minutes, as LangGraph's keys are; fractions are allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# What a thread's TTL does when it passes (LangGraph's `checkpointer.ttl.strategy`):
# delete the thread, or keep it with only its latest checkpoint per namespace.
TTLStrategy = Literal["delete", "keep_latest"]

# LangGraph's server sweeps every 5 minutes when a section names no interval.
DEFAULT_SWEEP_MINUTES = 5.0


@dataclass(frozen=True, slots=True)
class ItemTTL:
    """``store.ttl``: items put without a ``ttl`` get ``default_minutes`` (none: they
    never expire); a read refreshes an item's expiry when ``refresh_on_read`` (a call's
    ``refresh_ttl`` overrides it); expired items are swept every ``sweep_minutes``."""

    default_minutes: float | None = None
    refresh_on_read: bool = True
    sweep_minutes: float = DEFAULT_SWEEP_MINUTES


@dataclass(frozen=True, slots=True)
class ItemIndex:
    """``store.index``: semantic search. ``embed`` is what LangGraph's
    ``ensure_embeddings`` takes: a LangChain ``Embeddings``, a function of a list of
    texts (sync or async), or a ``provider:model`` string for ``init_embeddings``."""

    dims: int
    embed: Any
    fields: tuple[str, ...] = ("$",)


@dataclass(frozen=True, slots=True)
class ThreadTTL:
    """``checkpointer.ttl``: a thread created without a ``ttl`` of its own gets
    ``default_minutes`` and ``strategy``; expired threads are swept every
    ``sweep_minutes``."""

    default_minutes: float | None = None
    strategy: TTLStrategy = "delete"
    sweep_minutes: float = DEFAULT_SWEEP_MINUTES


@dataclass(frozen=True, slots=True)
class StoreOptions:
    item_ttl: ItemTTL = field(default_factory=ItemTTL)
    index: ItemIndex | None = None
    thread_ttl: ThreadTTL = field(default_factory=ThreadTTL)


# Sweep names: one lease row each in ``outlast_sweeps``.
ITEMS_SWEEP = "items"
THREADS_SWEEP = "threads"
