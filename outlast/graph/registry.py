"""Which graphs this deployment runs, resolved from ``langgraph.json`` and ``--graph``.

The same ``langgraph.json`` that LangGraph Studio reads: ``graphs`` maps a name to
``module:attr`` or ``path/to/file.py:attr``, where the attribute is a compiled graph, a
``StateGraph`` or a factory returning either. outlast supplies the checkpointer per run,
so a graph compiled with its own checkpointer gets outlast's instead. Only configured
names are ever loaded; a request can name a graph, never a module.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.store.base import BaseStore

from outlast.errors import GraphLoadError, UnknownGraph
from outlast.graph.models import check_model, model_name, uses_model
from outlast.importing import resolve

BUILTIN = {
    "agent": "outlast.graph.agent:make_graph",
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


class GraphRegistry:
    """The configured graphs by name, each built once, on first use or by ``load_all``."""

    def __init__(self, targets: dict[str, str], base_dir: Path | None = None) -> None:
        if not targets:
            raise GraphLoadError("no graphs configured")
        self._targets = dict(targets)
        self._base = base_dir or Path.cwd()
        self._graphs: dict[str, Pregel[Any, Any, Any, Any]] = {}

    @classmethod
    def from_config(cls, graphs_file: Path | None, extra: Iterable[str] = ()) -> GraphRegistry:
        """Graphs from ``langgraph.json`` (when it exists) plus ``--graph`` options;
        with neither, the built-in ones (``agent`` and ``steps``)."""
        targets: dict[str, str] = {}
        base = Path.cwd()
        if graphs_file is not None and graphs_file.exists():
            try:
                data = json.loads(graphs_file.read_text(encoding="utf-8"))
                targets.update({str(k): str(v) for k, v in data.get("graphs", {}).items()})
            except (ValueError, AttributeError) as exc:
                raise GraphLoadError(f"{graphs_file}: not a valid langgraph.json: {exc}") from exc
            base = graphs_file.resolve().parent
        for option in extra:
            name, target = parse_graph_option(option)
            targets[name] = target
        return cls(targets or dict(BUILTIN), base)

    @property
    def names(self) -> list[str]:
        return list(self._targets)

    def load_all(self) -> None:
        """Import every graph now, so a broken one fails at start, not at the first run."""
        for name in self._targets:
            self.get(name)

    def get(self, name: str) -> Pregel[Any, Any, Any, Any]:
        if name not in self._targets:
            raise UnknownGraph(
                f"unknown graph {name!r}; configured graphs: {', '.join(self.names)}"
            )
        graph = self._graphs.get(name)
        if graph is None:
            graph = self._build(name, self._targets[name])
            self._graphs[name] = graph
        return graph

    def model_for(self, name: str, config: dict[str, Any] | None) -> str | None:
        """The model a run of graph ``name`` will call, checked now (a missing provider
        package or key is the client's error at acceptance, not a worker's crash later);
        ``None`` for graphs that call no model."""
        if not uses_model(self.get(name)):
            return None
        configurable = (config or {}).get("configurable") or {}
        return check_model(model_name(configurable if isinstance(configurable, dict) else {}))

    def for_run(
        self, name: str, checkpointer: BaseCheckpointSaver[Any], store: BaseStore | None = None
    ) -> Pregel[Any, Any, Any, Any]:
        """The graph with outlast's saver and, given one, the run principal's item store
        (what a node receives as ``store``), in place of anything it was compiled with."""
        update: dict[str, Any] = {"checkpointer": checkpointer}
        if store is not None:
            update["store"] = store
        return self.get(name).copy(update=update)

    def _build(self, name: str, target: str) -> Pregel[Any, Any, Any, Any]:
        try:
            obj = self._resolve(target)
            if not isinstance(obj, Pregel | StateGraph) and callable(obj):
                params = inspect.signature(obj).parameters
                obj = obj({}) if params else obj()
                if inspect.isawaitable(obj):
                    raise GraphLoadError(f"graph {name!r}: async factories are not supported")
            if isinstance(obj, StateGraph):
                obj = obj.compile()
        except GraphLoadError:
            raise
        except Exception as exc:
            raise GraphLoadError(f"graph {name!r} ({target}): {type(exc).__name__}: {exc}") from exc
        if not isinstance(obj, Pregel):
            raise GraphLoadError(
                f"graph {name!r} ({target}) is a {type(obj).__name__}, not a LangGraph graph"
            )
        return obj

    def _resolve(self, target: str) -> Any:
        module_part, _, attr = target.rpartition(":")
        if module_part.endswith(".py") or "/" in module_part:
            path = (self._base / module_part).resolve()
            # A stable module name (not hash(), which is salted per process): functions in
            # it, such as probes named by a wait, must resolve the same in every worker.
            digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
            mod_name = f"outlast_user_graph_{path.stem}_{digest}"
            module = sys.modules.get(mod_name)
            if module is None:
                spec = importlib.util.spec_from_file_location(mod_name, path)
                if spec is None or spec.loader is None:
                    raise GraphLoadError(f"cannot load {path}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    # a half-run module must not stand in for the file next time
                    del sys.modules[mod_name]
                    raise
        else:
            if str(self._base) not in sys.path:
                sys.path.insert(0, str(self._base))
            return resolve(target)
        return getattr(module, attr)
