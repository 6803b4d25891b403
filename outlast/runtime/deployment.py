"""What a deployment's ``langgraph.json`` asks of the stores, and the store it opens.

The store layer knows nothing of ``langgraph.json`` (it is below the graphs), so the
``store`` and ``checkpointer`` sections become its ``StoreOptions`` here, where both
layers may be seen; every process that opens the store (``outlast serve``, ``outlast
worker``, ``outlast migrate``) opens it through ``open_store``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from outlast.config import Settings
from outlast.graph.manifest import (
    CheckpointerSection,
    CheckpointerTTL,
    Manifest,
    ManifestError,
    StoreSection,
    StoreTTL,
)
from outlast.importing import resolve_in
from outlast.store import Store, make_store
from outlast.store.options import DEFAULT_SWEEP_MINUTES, ItemIndex, ItemTTL, StoreOptions, ThreadTTL


def open_store(settings: Settings) -> Store:
    """The configured store (not opened yet) with what ``langgraph.json`` asks of it."""
    return make_store(settings, store_options(Manifest.read(settings.graphs_file)))


def store_options(manifest: Manifest) -> StoreOptions:
    """``store`` and ``checkpointer`` for the store layer. An ``embed`` that names a
    file (``./embed.py:fn``) is imported here, after ``env`` is applied; any other
    string is a ``provider:model`` for LangChain's ``init_embeddings``."""
    store = manifest.store or StoreSection()
    ttl = store.ttl or StoreTTL()
    index = None
    if store.index is not None:
        manifest.apply_env()
        index = ItemIndex(
            dims=store.index.dims,
            embed=_embedder(store.index.embed, manifest.base_dir),
            fields=tuple(store.index.fields or ("$",)),
        )
    threads = (manifest.checkpointer or CheckpointerSection()).ttl or CheckpointerTTL()
    return StoreOptions(
        item_ttl=ItemTTL(
            default_minutes=ttl.default_ttl,
            refresh_on_read=ttl.refresh_on_read,
            sweep_minutes=ttl.sweep_interval_minutes or DEFAULT_SWEEP_MINUTES,
        ),
        index=index,
        thread_ttl=ThreadTTL(
            default_minutes=threads.default_ttl,
            strategy=threads.strategy,
            sweep_minutes=threads.sweep_interval_minutes or DEFAULT_SWEEP_MINUTES,
        ),
    )


def _embedder(embed: str, base: Path) -> Any:
    module_part = embed.rpartition(":")[0]
    if module_part.endswith(".py") or "/" in module_part:
        try:
            return resolve_in(embed, base)
        except Exception as exc:  # a missing file, a module that raises as it is imported
            raise ManifestError(f"store.index.embed: {type(exc).__name__}: {exc}") from exc
    return embed
