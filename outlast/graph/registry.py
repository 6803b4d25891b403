"""Which graphs this deployment runs, resolved from ``langgraph.json`` and ``--graph``.

The same ``langgraph.json`` that LangGraph Studio reads: ``graphs`` maps a name to
``module:attr`` or ``path/to/file.py:attr`` (or ``{"path": ..., "description": ...}``),
where the attribute is a compiled graph, a ``StateGraph`` or a factory called per use
as LangGraph's server calls it (``factories.py``). outlast supplies the checkpointer and
the item store of every use, so a graph compiled with its own gets outlast's instead.
Only configured names are ever loaded; a request can name a graph, never a module.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from langgraph.pregel import Pregel

from outlast.errors import GraphLoadError, UnknownGraph
from outlast.graph.factories import Access, Factory, Static, load
from outlast.graph.manifest import Manifest
from outlast.graph.models import check_model, model_name, uses_model
from outlast.importing import resolve_in

log = logging.getLogger(__name__)

BUILTIN = {
    "agent": "outlast.graph.agent:graph",
    "steps": "outlast.graph.example:graph",
    "booking": "outlast.graph.booking:graph",
}


def parse_graph_option(option: str) -> tuple[str, str]:
    """``name=module:attr`` or ``module:attr`` (named after the attribute)."""
    if "=" in option:
        name, target = option.split("=", 1)
    else:
        target = option
        name = option.rsplit(":", 1)[-1]
    if ":" not in target or not name:
        raise GraphLoadError(f"--graph {option!r}: expected name=module:attr or path.py:attr")
    return name.strip(), target.strip()


def targets_of(manifest: Manifest, extra: Iterable[str] = ()) -> dict[str, str]:
    """The graphs to serve: the file's and ``--graph``'s (``extra``); outlast's demo
    graphs only when neither a file nor ``--graph`` names any. A file with no graphs is
    refused (``ManifestError``) unless ``--graph`` gives some."""
    options = dict(parse_graph_option(option) for option in extra)
    if manifest.source is None:
        return options or dict(BUILTIN)
    targets = manifest.graph_targets() if options else manifest.graphs_or_refuse()
    return {**targets, **options}


class GraphRegistry:
    """The configured graphs by name, each loaded once (on first use or by ``load_all``):
    a graph built then, or a factory opened per use (``outlast.graph.factories``). A graph
    that fails to load is remembered with its error: it is reported, its uses fail with
    that error, and the other graphs serve on."""

    def __init__(
        self, targets: dict[str, str], base_dir: Path | None = None, *, app_auth: bool = False
    ) -> None:
        if not targets:
            raise GraphLoadError("no graphs configured")
        self._targets = dict(targets)
        self._base = base_dir or Path.cwd()
        # langgraph.json names an auth.py: its handlers, not the principal, decide who
        # shares what (a run's store items are the app's one tree, store/items.py)
        self.app_auth = app_auth
        self._loaded: dict[str, Static | Factory] = {}
        self._errors: dict[str, GraphLoadError] = {}

    @classmethod
    def from_config(cls, graphs_file: Path | None, extra: Iterable[str] = ()) -> GraphRegistry:
        """Graphs from ``langgraph.json`` plus ``--graph`` options; with neither (no file
        given: ``None``), the built-in demo ones (``agent``, ``steps``, ``booking``). A
        file that does not exist, or that lists no graphs while no ``--graph`` adds one,
        is a ``ManifestError`` (a ``GraphLoadError``)."""
        return cls.from_manifest(Manifest.read(graphs_file), extra)

    @classmethod
    def from_manifest(cls, manifest: Manifest, extra: Iterable[str] = ()) -> GraphRegistry:
        targets = targets_of(manifest, extra)
        manifest.apply_env()  # before any graph module is imported: it may read them
        app_auth = manifest.auth is not None and bool(manifest.auth.path)
        return cls(targets, manifest.base_dir, app_auth=app_auth)

    @property
    def names(self) -> list[str]:
        return list(self._targets)

    @property
    def errors(self) -> dict[str, str]:
        """The graphs that failed to load, with why."""
        return {name: str(exc) for name, exc in self._errors.items()}

    def error_of(self, name: str) -> str | None:
        exc = self._errors.get(name)
        return None if exc is None else str(exc)

    def load_all(self) -> dict[str, str]:
        """Load every graph now, so a broken one is known (and logged) at start, not at
        its first run; the others serve whatever one of them does."""
        for name in self._targets:
            with contextlib.suppress(GraphLoadError):
                self.load(name)
        return self.errors

    def load(self, name: str) -> Static | Factory:
        """Graph ``name`` imported (its module run once), built if it is a graph."""
        if name not in self._targets:
            raise UnknownGraph(
                f"unknown graph {name!r}; configured graphs: {', '.join(self.names)}"
            )
        if name in self._errors:
            raise self._errors[name]
        loaded = self._loaded.get(name)
        if loaded is None:
            try:
                loaded = self._build(name, self._targets[name])
            except GraphLoadError as exc:
                log.error("%s", exc, exc_info=exc.__cause__)
                self._errors[name] = exc
                raise
            self._loaded[name] = loaded
        return loaded

    def is_factory(self, name: str) -> bool:
        return isinstance(self.load(name), Factory)

    def static(self, name: str) -> Pregel[Any, Any, Any, Any]:
        """The graph built at load; a factory's graph exists only while it is opened."""
        loaded = self.load(name)
        if isinstance(loaded, Factory):
            raise GraphLoadError(f"graph {name!r} is a factory: it is built per use (open)")
        return loaded.graph

    @contextlib.asynccontextmanager
    async def open(self, name: str, access: Access) -> AsyncIterator[Pregel[Any, Any, Any, Any]]:
        """Graph ``name`` for one use, on ``access``'s saver and item store (for a run, its
        fenced saver and its principal's items: a factory's graph too)."""
        async with self.load(name).open(access) as graph:
            yield graph

    def model_for(self, name: str, config: dict[str, Any] | None) -> str | None:
        """The model a run of graph ``name`` will call, checked now (a missing provider
        package or key is the client's error at acceptance, not a worker's crash later);
        ``None`` for graphs that call no model, and for a factory's (its graph is built
        when the run starts; the worker resolves the model then)."""
        try:
            loaded = self.load(name)
        except GraphLoadError:
            return None  # accepted, its run fails with why (as where the graph loads)
        if isinstance(loaded, Factory) or not uses_model(loaded.graph):
            return None
        configurable = (config or {}).get("configurable") or {}
        return check_model(model_name(configurable if isinstance(configurable, dict) else {}))

    def _build(self, name: str, target: str) -> Static | Factory:
        try:
            return load(name, self._resolve(target))
        except GraphLoadError as exc:
            raise GraphLoadError(f"graph {name!r} ({target}) could not be loaded: {exc}") from exc
        except Exception as exc:
            raise GraphLoadError(
                f"graph {name!r} ({target}) could not be loaded: {type(exc).__name__}: {exc}"
            ) from exc

    def _resolve(self, target: str) -> Any:
        return resolve_in(target, self._base)
