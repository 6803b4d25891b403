"""The thread service: what a thread request decides, once, behind the faces (the
LangGraph face's ``/threads/...``, protocol v2's reads).

A thread is a row (``outlast_threads``: its owner, metadata, TTL) and a checkpoint
lineage (the saver's). Writing one touches both, in an order that leaves no half:

- **create** makes the row (``if_exists``: the thread there is returned to whom it would
  be anyway, else ``ThreadExists``), then applies its ``supersteps`` through its graph as
  ``update_state`` would; a superstep its graph refuses removes the thread again
  (``SuperstepsRefused``): it is made with them or not at all.
- **copy** makes a new row with the original's metadata (asked of ``threads.create``, a
  copy being a new thread) and its checkpoints copied by the saver (``acopy_thread``:
  every namespace, blobs and pending writes), never the runs or their logs.
- **prune** does now, to the threads the caller may delete, what a TTL's strategy does
  (``store.lg_prune_threads``: refused whole while one has an active run); the others
  are skipped and not counted.
- **delete** removes the row, its runs and logs (a run that owes compensations is
  cancelled and kept until its worker has undone them: ``transitions.outlives_its_thread``,
  decided in the store's transaction), then the checkpoints.

Every lookup goes through the one owner rule (``service/owners.py``): another principal's
thread, or one the app's ``threads`` handler filters out for the verb, is not found
(``ThreadNotFound``), so existence never leaks through a status code. The service is
bound to one caller, as ``RunService`` is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.types import StateSnapshot, StateUpdate

from outlast.errors import (
    PruneRefused,
    SuperstepsRefused,
    ThreadExists,
    ThreadNotFound,
    UnprocessableRequest,
)
from outlast.graph.factories import Access, AccessContext
from outlast.graph.registry import GraphRegistry
from outlast.service.authz import NOBODY, Authz, configurable_of, matches
from outlast.service.owners import Owners
from outlast.store import Store, Thread
from outlast.store.items import for_principal
from outlast.store.options import TTLStrategy

# One superstep: the updates applied together, each ``StateUpdate(values, as_node)``.
Superstep = Sequence[StateUpdate]


@dataclass(frozen=True, slots=True)
class ThreadService:
    store: Store
    registry: GraphRegistry
    principal: str = ""
    authz: Authz = NOBODY  # the app's @auth.on handlers, for this caller

    @property
    def owners(self) -> Owners:
        """Who may touch which thread, for this caller (the one owner rule)."""
        return Owners(self.store, self.principal, self.authz)

    # -- reading ---------------------------------------------------------------------

    async def find(
        self, thread_id: str, action: str | None = "read", value: dict[str, Any] | None = None
    ) -> Thread | None:
        """The caller's thread, if the app's ``threads`` handler for ``action`` (asked with
        ``value``, which it may change: the caller reads it back) lets it through: a
        thread its filter leaves out does not exist. ``action`` None: asked already."""
        return await self.owners.thread(thread_id, action, value)

    async def get(
        self, thread_id: str, action: str | None = "read", value: dict[str, Any] | None = None
    ) -> Thread:
        """``find``, or ``ThreadNotFound``."""
        thread = await self.find(thread_id, action, value)
        if thread is None:
            raise ThreadNotFound(f"Thread with ID {thread_id} not found")
        return thread

    def graph_id(self, thread: Thread) -> str:
        """The graph whose channels the thread's checkpoints hold: its latest run's, else
        the one its metadata names, else the first configured."""
        names = self.registry.names
        for name in (thread.run_graph, thread.metadata.get("graph_id")):
            if isinstance(name, str) and name in names:
                return name
        return names[0]

    @contextlib.asynccontextmanager
    async def graph(self, thread: Thread, context: AccessContext) -> AsyncIterator[Any]:
        """The thread's graph on the shared (unfenced) saver: for reading states
        (``threads.read``) and for updates a client makes between runs
        (``threads.update``), never for running. A factory gets the thread's latest run's
        config, so that it builds the graph that run ran."""
        graph_id = self.graph_id(thread)
        configurable: dict[str, Any] = {}
        if thread.run_id is not None and self.registry.is_factory(graph_id):
            latest = await self.store.get_run(thread.run_id)
            configurable = dict((latest.config.get("configurable") if latest else None) or {})
        configurable.update(thread_id=thread.thread_id, graph_id=graph_id)
        if self.authz.user is not None:  # who reads, as LangGraph's server says it
            configurable.update(configurable_of(self.authz.user))
        use = Access(
            context,
            self.store.checkpointer(),
            for_principal(self.store.items, self.principal, shared=self.authz.shared),
            {"configurable": configurable},
            self.principal,
        )
        async with self.registry.open(graph_id, use) as graph:
            yield graph

    async def state(
        self, thread: Thread, checkpoint: dict[str, Any] | None = None, subgraphs: bool = False
    ) -> StateSnapshot:
        """The thread's state, at ``checkpoint`` (its ``checkpoint_ns`` and
        ``checkpoint_id``; None: the latest), as its graph reads it (``threads.read``)."""
        configurable: dict[str, Any] = {"thread_id": thread.thread_id, "checkpoint_ns": ""}
        if checkpoint:
            configurable.update({k: v for k, v in checkpoint.items() if v is not None})
            configurable["thread_id"] = thread.thread_id
        async with self.graph(thread, "threads.read") as graph:
            state: StateSnapshot = await graph.aget_state(
                {"configurable": configurable}, subgraphs=subgraphs
            )
        return state

    async def history(
        self,
        thread: Thread,
        *,
        limit: int,
        before: str | None = None,
        checkpoint: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[StateSnapshot]:
        """The thread's states, newest first: at most ``limit``, older than checkpoint
        ``before``, within ``checkpoint`` (a namespace, or one checkpoint), whose
        metadata holds ``metadata``. A filter key the saver cannot query by is
        ``UnprocessableRequest``."""
        configurable: dict[str, Any] = {"thread_id": thread.thread_id}
        configurable.update({k: v for k, v in (checkpoint or {}).items() if v is not None})
        configurable["thread_id"] = thread.thread_id
        before_config = (
            {"configurable": {"thread_id": thread.thread_id, "checkpoint_id": before}}
            if before
            else None
        )
        async with self.graph(thread, "threads.read") as graph:
            try:
                return [
                    s
                    async for s in graph.aget_state_history(
                        {"configurable": configurable},
                        limit=limit,
                        before=before_config,
                        filter=metadata,
                    )
                ]
            except ValueError as exc:  # the saver refuses a filter key it cannot query by
                raise UnprocessableRequest(f"metadata filter: {exc}") from None

    # -- writing ---------------------------------------------------------------------

    async def create(
        self,
        thread_id: str | None,
        metadata: dict[str, Any],
        *,
        if_exists: str = "raise",
        ttl_minutes: float | None = None,
        ttl_strategy: TTLStrategy = "delete",
        supersteps: Sequence[Superstep] = (),
    ) -> Thread:
        """A new thread (``thread_id`` None: a new id), its metadata as the app's
        ``threads.create`` handler stamps it, and its TTL (None: the deployment's
        default). An existing one is returned under ``if_exists="do_nothing"`` only to
        whom it would be anyway (its owner, or whom ``threads.read`` admits) and within
        create's own filter (GHSA-747p-c922-m55f: a conditional create skipped the
        filters); otherwise ``ThreadExists``. ``supersteps`` are applied to a new thread
        through its graph, or it is not made (``SuperstepsRefused``)."""
        thread_id = thread_id or str(uuid.uuid4())
        asked: dict[str, Any] = {
            "thread_id": thread_id,
            "metadata": dict(metadata),
            "if_exists": if_exists,
        }
        wanted = await self.authz.check("threads", "create", asked)  # may stamp metadata
        stamped = dict(asked.get("metadata") or {})
        thread, created = await self.store.lg_create_thread(
            thread_id, self.principal, stamped, ttl_minutes, ttl_strategy
        )
        if not created:
            seen = await self.owners.thread(thread_id, "read")
            theirs = seen is None or not matches(thread.metadata, wanted)
            if if_exists == "raise" or theirs:
                raise ThreadExists(f"Thread {thread_id} already exists")
            return thread
        if not supersteps:
            return thread
        try:
            await self._apply(thread, supersteps)
        except Exception as exc:
            await self._remove(thread_id)  # made with its supersteps or not at all
            raise SuperstepsRefused(f"supersteps: {type(exc).__name__}: {exc}") from None
        return await self.get(thread_id)

    async def _apply(self, thread: Thread, supersteps: Sequence[Superstep]) -> None:
        config: Any = {"configurable": {"thread_id": thread.thread_id}}
        async with self.graph(thread, "threads.update") as graph:
            for step in supersteps:
                config = await graph.abulk_update_state(config, [list(step)])

    async def copy(self, thread_id: str) -> Thread:
        """A new thread of the caller's with the original's metadata (as the app's
        ``threads.create`` handler stamps it) and a copy of its checkpoints; its runs and
        their logs stay with the original. The copy has no run: it is returned as the
        original's graph reads it (``run_graph``), which its state needs."""
        source = await self.get(thread_id)
        target_id = str(uuid.uuid4())
        asked: dict[str, Any] = {"thread_id": target_id, "metadata": {**source.metadata}}
        await self.authz.check("threads", "create", asked)  # a copy is a new thread
        metadata = dict(asked.get("metadata") or {})
        await self.store.lg_create_thread(target_id, self.principal, metadata)
        try:
            await self.store.checkpointer().acopy_thread(source.thread_id, target_id)
        except Exception:
            await self._remove(target_id)
            raise
        copied = await self.get(target_id)
        graph = source.run_graph or source.metadata.get("graph_id")
        return dataclasses.replace(copied, run_graph=graph if isinstance(graph, str) else None)

    async def prune(self, thread_ids: Sequence[str], strategy: TTLStrategy) -> list[str]:
        """What a TTL's ``strategy`` does, now, to each of ``thread_ids`` the caller may
        delete (``delete``: as ``delete``; ``keep_latest``: the latest checkpoint of each
        namespace): the ids pruned. ``ThreadBusy``, and nothing pruned, when one has an
        active run; ``PruneRefused`` when the saver cannot prune one's history."""
        visible = [
            thread_id
            for thread_id in dict.fromkeys(thread_ids)
            if await self.find(thread_id, "delete") is not None
        ]
        try:
            return await self.store.lg_prune_threads(visible, strategy)
        except NotImplementedError as exc:
            raise PruneRefused(f"keep_latest: {exc}") from None

    async def delete(self, thread_id: str) -> None:
        """The thread, its runs and their logs, and its checkpoints (``ThreadNotFound``
        for one the caller may not delete). A run that owes compensations is cancelled
        and kept until its worker has undone what it did; any other run goes with the
        thread, and its worker, losing its lease with the row, stops writing."""
        await self.get(thread_id, "delete")
        await self._remove(thread_id)

    async def _remove(self, thread_id: str) -> None:
        await self.store.lg_delete_thread(thread_id)
        await self.store.checkpointer().adelete_thread(thread_id)
