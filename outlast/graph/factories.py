"""A ``langgraph.json`` entry as LangGraph's server serves it: a graph built once, or a
factory called each time the graph is needed.

A factory is a function (sync or ``async``, or one returning a context manager, sync or
async) that returns a compiled graph or a ``StateGraph``. It takes nothing, the
``RunnableConfig``, a ``ServerRuntime`` (``langgraph_sdk.runtime``), or both, told apart
as LangGraph's server tells them: by annotation (``RunnableConfig``, ``ServerRuntime``),
then by name (``config``, ``runtime``), then by position (config first, then runtime;
one bare parameter is the config, the form LangGraph's factories had before the
runtime). The server calls it for every run (``threads.create_run``, the run's config and
``context``) and for what reads or writes a thread's state or shows the graph
(``threads.read``, ``threads.update``, ``assistants.read``), so it is never called at
start. Whatever it returns runs on outlast's checkpointer and item store (``with_parts``),
whatever it was compiled with: a factory cannot take a run off its fenced saver.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.store.base import BaseStore
from langgraph_sdk.runtime import _ExecutionRuntime, _ReadRuntime

from outlast.errors import GraphLoadError
from outlast.graph.users import user_in

# Why a graph is wanted: LangGraph's ``langgraph_sdk.runtime.AccessContext``.
AccessContext = Literal["threads.create_run", "threads.update", "threads.read", "assistants.read"]
Want = Literal["config", "runtime"]
Graph = Pregel[Any, Any, Any, Any]


@dataclass(frozen=True, slots=True)
class Access:
    """One use of a graph: why (``context``), with what parts (the saver, for a run its
    fenced one; the item store of the caller's principal), the config a factory gets
    (a run's own; a thread's or an assistant's otherwise), who asks (``""``: nobody
    authenticated) and, for a run, its ``context``."""

    context: AccessContext
    checkpointer: BaseCheckpointSaver[Any]
    store: BaseStore
    config: Mapping[str, Any] = field(default_factory=dict)
    principal: str = ""
    run_context: Any = None


@dataclass(frozen=True, slots=True)
class PrincipalUser:
    """An outlast principal as the ``BaseUser`` LangGraph's runtime carries (outlast's
    keys name a principal and grant no finer permissions)."""

    identity: str

    @property
    def display_name(self) -> str:
        return self.identity

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def permissions(self) -> list[str]:
        return []

    def _fields(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "display_name": self.identity,
            "is_authenticated": True,
            "permissions": [],
        }

    def __getitem__(self, key: str) -> Any:
        return self._fields()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields()

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields())


def server_runtime(access: Access) -> _ExecutionRuntime[Any] | _ReadRuntime[Any]:
    """The ``ServerRuntime`` LangGraph's server hands a factory: the execution variant
    (with the run's ``context``) for a run, the read variant for anything else. The user
    is the app's ``auth.py`` user when it has one (in the config, where the run was
    accepted for it, or where a read put the caller), else the API key's principal,
    ``None`` without either, as LangGraph's is without custom auth."""
    user: Any = user_in(access.config)
    if user is None and access.principal:
        user = PrincipalUser(access.principal)
    if access.context == "threads.create_run":
        return _ExecutionRuntime(
            access_context=access.context,
            user=user,
            store=access.store,
            context=access.run_context,
        )
    return _ReadRuntime(access_context=access.context, user=user, store=access.store)


def with_parts(graph: Graph, access: Access) -> Graph:
    """The graph on outlast's saver and item store, in place of anything it was compiled
    with (what ``copy`` changes is this use's only: the graph itself is shared)."""
    return graph.copy(update={"checkpointer": access.checkpointer, "store": access.store})


def compiled(name: str, obj: Any) -> Graph:
    if isinstance(obj, StateGraph):
        obj = obj.compile()
    if not isinstance(obj, Pregel):
        raise GraphLoadError(f"graph {name!r} is a {type(obj).__name__}, not a LangGraph graph")
    return obj


@dataclass(frozen=True, slots=True)
class Static:
    """A graph built once, when its module is loaded."""

    name: str
    graph: Graph

    @contextlib.asynccontextmanager
    async def open(self, access: Access) -> AsyncIterator[Graph]:
        yield with_parts(self.graph, access)


@dataclass(frozen=True, slots=True)
class Factory:
    """A function that builds the graph for each use."""

    name: str
    fn: Callable[..., Any]
    wants: dict[str, Want]  # parameter name → what it is given
    positional: frozenset[str] = frozenset()  # the positional-only ones

    @classmethod
    def of(cls, name: str, fn: Callable[..., Any]) -> Factory:
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # no signature to read (a builtin): call it bare
            return cls(name, fn, {})
        wants = _wants(name, params)
        positional = frozenset(
            p.name for p in params if p.name in wants and p.kind is p.POSITIONAL_ONLY
        )
        return cls(name, fn, wants, positional)

    @contextlib.asynccontextmanager
    async def open(self, access: Access) -> AsyncIterator[Graph]:
        """The factory's graph for this use; a context manager it returned stays open
        until the use ends (a run's end), and is closed then."""
        async with contextlib.AsyncExitStack() as stack:
            try:
                graph = compiled(self.name, await self._made(access, stack))
            except GraphLoadError:
                raise
            except Exception as exc:
                raise GraphLoadError(
                    f"graph {self.name!r}: its factory raised {type(exc).__name__}: {exc} "
                    f"(access context {access.context})"
                ) from exc
            yield with_parts(graph, access)

    async def _made(self, access: Access, stack: contextlib.AsyncExitStack) -> Any:
        given: dict[str, Any] = {}
        for param, want in self.wants.items():
            # a copy: what the factory does to its config is not the run's
            given[param] = _copied(access.config) if want == "config" else server_runtime(access)
        args = [v for k, v in given.items() if k in self.positional]
        made = self.fn(*args, **{k: v for k, v in given.items() if k not in self.positional})
        if inspect.isawaitable(made):
            made = await made
        if isinstance(made, contextlib.AbstractAsyncContextManager):
            return await stack.enter_async_context(made)
        if isinstance(made, contextlib.AbstractContextManager):
            return stack.enter_context(made)
        return made


def load(name: str, obj: Any) -> Static | Factory:
    """What a ``langgraph.json`` entry names, ready to open: a graph (a ``StateGraph``
    compiled now) or a factory, whose parameters are read now so a factory that cannot
    be called fails at load."""
    if not isinstance(obj, Pregel | StateGraph) and callable(obj):
        return Factory.of(name, obj)
    return Static(name, compiled(name, obj))


def _wants(name: str, params: list[inspect.Parameter]) -> dict[str, Want]:
    wants: dict[str, Want] = {}
    unknown: list[inspect.Parameter] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        want = _by_annotation(p.annotation) or _by_name(p.name)
        if want is not None:
            wants[p.name] = want
        elif p.default is p.empty:
            unknown.append(p)
    for p in unknown:  # by position: the config first, then the runtime
        free = [w for w in ("config", "runtime") if w not in wants.values()]
        if not free or p.kind is p.KEYWORD_ONLY:
            raise GraphLoadError(
                f"graph {name!r}: its factory's parameter {p.name!r} is neither the config "
                "(RunnableConfig) nor the runtime (ServerRuntime)"
            )
        wants[p.name] = free[0]  # type: ignore[assignment]
    if len(set(wants.values())) < len(wants):
        raise GraphLoadError(
            f"graph {name!r}: its factory takes {sorted(wants)}, two of them the same thing "
            "(one config, one runtime at most)"
        )
    return {p.name: wants[p.name] for p in params if p.name in wants}  # in call order


def _by_annotation(annotation: Any) -> Want | None:
    if annotation is inspect.Parameter.empty:
        return None
    # a string under ``from __future__ import annotations``, often of a name imported
    # only for type checking (LangGraph's own examples do so): read, never evaluated
    text = annotation if isinstance(annotation, str) else repr(annotation)
    if "RunnableConfig" in text:
        return "config"
    if "Runtime" in text:
        return "runtime"
    return None


def _by_name(name: str) -> Want | None:
    return {"config": "config", "runtime": "runtime"}.get(name)  # type: ignore[return-value]


def _copied(config: Mapping[str, Any]) -> dict[str, Any]:
    copy = dict(config)
    for key in ("configurable", "metadata"):
        if isinstance(copy.get(key), dict):
            copy[key] = dict(copy[key])
    return copy
