"""The assistant service: what an assistant request decides, once, behind the faces (the
LangGraph face's ``/assistants/...``, a run's assistant, MCP's assistant tools).

Two kinds of assistant, one vocabulary:

- **System assistants**, one per configured graph, id ``store.base.system_assistant_id``
  (``uuid5`` in the namespace LangGraph's server uses). They are derived from the
  registry, not stored, every principal sees them, and they cannot be changed or deleted
  (``SystemAssistantReadOnly``, 409). A graph's name stands for its system assistant
  wherever an assistant id is taken.
- **User assistants**, stored with their versions (``store/assistants.py``), their
  creator's (``Owners.scope``: under an app's ``auth.py``, every principal's, and the
  handlers filter).

The app's ``@auth.on.assistants`` handlers (``service/authz.py``) are asked here, as
LangGraph's server asks them: ``create`` (may stamp ``metadata``; an existing assistant
its filter leaves out is a 409, as a taken id), ``read`` (get, graph, versions),
``update`` (patch, set latest), ``delete``, ``search`` (search, count). A filter is
matched against the assistant's metadata: an assistant it leaves out does not exist for
the caller (``AssistantNotFound``, absent from a search and a count). System assistants
are filtered too, against their ``{"created_by": "system"}``: handlers narrow what a
caller sees and never widen it.

A run on one of the caller's assistants takes ``assistants.read`` as well as
``threads.create_run`` (``runnable``), as on LangGraph's server since
GHSA-jfj5-wrj9-63x4; a run that names a graph (its system assistant) is
``threads.create_run``'s alone to allow.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langgraph.pregel import Pregel

from outlast.errors import InvalidAssistant, SystemAssistantReadOnly, UnknownGraph
from outlast.graph.factories import Access
from outlast.graph.registry import GraphRegistry
from outlast.service.authz import NOBODY, Authz, Filter, matches
from outlast.service.owners import Owners
from outlast.store import Store
from outlast.store.assistants import AssistantExists, AssistantNotFound
from outlast.store.base import Assistant, system_assistant_id
from outlast.store.items import for_principal

# System assistants are as old as this process: they are made from its configuration.
STARTED = dt.datetime.now(dt.UTC)
SYSTEM_METADATA = {"created_by": "system"}
# A stored search read whole, to filter in Python (the handler's filter has operators
# the store's metadata filter has not): the principal's assistants, as thread searches do.
EVERY = 1_000_000


def system_assistant(graph_id: str, error: str | None = None) -> Assistant:
    """The assistant of a configured graph; one that failed to load says why, in its
    description (where Studio shows it) and under ``metadata.load_error``."""
    return Assistant(
        assistant_id=system_assistant_id(graph_id),
        graph_id=graph_id,
        name=graph_id,
        description=None if error is None else f"Not loaded: {error}",
        config={},
        context={},
        metadata=dict(SYSTEM_METADATA)
        if error is None
        else {**SYSTEM_METADATA, "load_error": error},
        version=1,
        created_at=STARTED,
        updated_at=STARTED,
    )


@dataclass(frozen=True, slots=True)
class AssistantQuery:
    """What a search or a count asks for: every given metadata key with exactly its
    value, the graph, a case-insensitive substring of the name."""

    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None

    def matches(self, a: Assistant) -> bool:
        """The store's filter, for the system assistants."""
        return (
            all(k in a.metadata and a.metadata[k] == v for k, v in (self.metadata or {}).items())
            and (not self.graph_id or a.graph_id == self.graph_id)
            and (not self.name or self.name.lower() in a.name.lower())
        )


@dataclass(frozen=True, slots=True)
class AssistantDraft:
    """A new user assistant as a client asks for it (LangGraph's ``AssistantsCreate``):
    ``assistant_id`` a UUID when given (a name would be read as a graph name)."""

    graph_id: str
    assistant_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: str = "raise"  # or "do_nothing": the caller's existing assistant, unchanged
    name: str | None = None
    description: str | None = None


def kept(found: Sequence[Assistant], wanted: Filter | None) -> list[Assistant]:
    """The assistants a handler's filter lets through."""
    return [a for a in found if matches(a.metadata, wanted)]


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class AssistantService:
    """Assistants as one caller (``principal``, and the app's handlers for it) sees them."""

    store: Store
    registry: GraphRegistry
    principal: str = ""
    authz: Authz = NOBODY

    @property
    def owners(self) -> Owners:
        return Owners(self.store, self.principal, self.authz)

    # -- reading ---------------------------------------------------------------------

    def system_assistants(self) -> list[Assistant]:
        return [system_assistant(g, self.registry.error_of(g)) for g in self.registry.names]

    def system_graph(self, assistant_id: str) -> str | None:
        """The graph whose system assistant ``assistant_id`` names (an id or a graph name)."""
        names = self.registry.names
        if assistant_id in names:
            return assistant_id
        canonical = _uuid(assistant_id)
        return next((g for g in names if system_assistant_id(g) == canonical), None)

    async def lookup(self, assistant_id: str) -> Assistant | None:
        """A system assistant (by id or graph name) or one of the caller's own; no
        handler is asked."""
        graph = self.system_graph(assistant_id)
        if graph is not None:
            return system_assistant(graph, self.registry.error_of(graph))
        canonical = _uuid(assistant_id)
        if canonical is None:
            return None
        return await self.store.get_assistant(canonical, self.owners.scope)

    async def resolve(self, assistant_id: str) -> Assistant:
        """The assistant a run names; anything else is ``InvalidAssistant`` (422, the
        status LangGraph's server gives a run on an assistant it cannot resolve)."""
        found = await self.lookup(assistant_id)
        if found is None:
            raise InvalidAssistant(
                f"Invalid assistant: '{assistant_id}'. Must be either a valid assistant UUID "
                f"or one of the registered graphs: {', '.join(self.registry.names)}"
            )
        return found

    async def get(self, assistant_id: str) -> Assistant:
        """The assistant as ``assistants.read`` lets the caller see it (else
        ``AssistantNotFound``)."""
        found = await self.lookup(assistant_id)
        if found is None or not await self.admits(found, "read"):
            raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
        return found

    async def admits(
        self, found: Assistant, action: str, value: dict[str, Any] | None = None
    ) -> bool:
        """Whether the handler for ``action`` lets the caller see ``found``."""
        asked = {"assistant_id": found.assistant_id, **(value or {})}
        return await self.authz.admits("assistants", action, asked, found.metadata)

    async def runnable(self, found: Assistant, named: str) -> None:
        """Refuse a run on ``found`` (``named`` so by the request) that ``assistants.read``
        does not let the caller see: ``AssistantNotFound`` as for a read, ``Forbidden``
        when the handler says False."""
        if found.assistant_id == system_assistant_id(found.graph_id):
            return  # by its id, not its metadata: a caller may write created_by: system
        if not await self.admits(found, "read"):
            raise AssistantNotFound(f"Assistant '{named}' not found")

    async def search_filter(self, asked: dict[str, Any]) -> Filter | None:
        """``assistants.search``'s filter (``None``: everything the query matches)."""
        return await self.authz.filter("assistants", "search", asked)

    async def search(
        self,
        query: AssistantQuery,
        *,
        limit: int = 10,
        offset: int = 0,
        sort_by: str | None = None,
        sort_order: str | None = None,
    ) -> tuple[list[Assistant], int]:
        """One page of the system assistants and the caller's own, and how many match in
        all. The stored ones come sorted from the database, the system ones are merged in
        with the same order (ties by id), so a page is the same whichever kind its rows
        are."""
        by = sort_by or "created_at"
        desc = (sort_order or "desc") == "desc"
        # as LangGraph's server asks it: `metadata` a dict, {} when the query has none
        # (the tutorials' handler does `value.setdefault("metadata", {}).update(...)`)
        asked = {
            "graph_id": query.graph_id,
            "metadata": dict(query.metadata or {}),
            "limit": limit,
            "offset": offset,
        }
        # enough stored rows to place the system ones among them
        merged, total = await self._matching(query, asked, by, desc, offset + limit)
        merged.sort(key=lambda a: a.assistant_id)
        merged.sort(key=lambda a: getattr(a, by), reverse=desc)  # stable: ties by id
        return merged[offset : offset + limit], total

    async def count(self, query: AssistantQuery) -> int:
        """As many as a search finds (``assistants.search`` is asked, with ``limit`` and
        ``offset`` 0, as LangGraph's server asks it for a count)."""
        asked = {
            "graph_id": query.graph_id,
            "metadata": dict(query.metadata or {}),
            "limit": 0,
            "offset": 0,
        }
        return (await self._matching(query, asked, "created_at", True, 1))[1]

    async def _matching(
        self, q: AssistantQuery, asked: dict[str, Any], sort_by: str, desc: bool, enough: int
    ) -> tuple[list[Assistant], int]:
        """The system assistants and enough of the caller's own that match the query and
        ``assistants.search``'s filter (all of them when there is a filter: it is matched
        here), unsorted; and how many match in all. The metadata searched by is the
        handler's ``value["metadata"]`` (what it wrote there narrows the search, as on
        LangGraph's server)."""
        wanted = await self.search_filter(asked)
        metadata = asked.get("metadata")
        q = dataclasses.replace(q, metadata=dict(metadata) if isinstance(metadata, dict) else None)
        system = kept([a for a in self.system_assistants() if q.matches(a)], wanted)
        stored, stored_total = await self.store.search_assistants(
            principal=self.owners.scope,
            metadata=q.metadata or None,
            graph_id=q.graph_id,
            name=q.name,
            limit=enough if wanted is None else EVERY,
            offset=0,
            sort_by=sort_by,
            sort_order="desc" if desc else "asc",
        )
        if wanted is not None:
            stored = kept(stored, wanted)
            stored_total = len(stored)
        return [*system, *stored], len(system) + stored_total

    async def versions(
        self,
        assistant_id: str,
        *,
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Assistant]:
        """Newest first. A system assistant has one version, itself. ``assistants.read``'s
        filter is matched against each version's metadata, as LangGraph's server does."""
        graph = self.system_graph(assistant_id)
        if graph is not None:
            only = system_assistant(graph, self.registry.error_of(graph))
            shown = AssistantQuery(metadata=metadata).matches(only)
            if offset or not shown or not await self.admits(only, "read"):
                return []
            return [only]
        canonical = _uuid(assistant_id)
        if canonical is None:
            raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
        wanted = await self.authz.filter("assistants", "read", {"assistant_id": canonical})
        found = await self.store.list_assistant_versions(
            canonical,
            principal=self.owners.scope,
            metadata=metadata,
            limit=limit if wanted is None else EVERY,
            offset=offset if wanted is None else 0,
        )
        if wanted is not None:
            found = kept(found, wanted)[offset : offset + limit]
        return found

    @contextlib.asynccontextmanager
    async def graph(
        self, assistant_id: str
    ) -> AsyncIterator[tuple[str, Pregel[Any, Any, Any, Any]]]:
        """The assistant's graph id and graph, opened to be looked at (``assistants.read``:
        a factory gets the assistant's config)."""
        found = await self.get(assistant_id)
        config = dict(found.config)
        config["configurable"] = {
            **(found.config.get("configurable") or {}),
            "assistant_id": found.assistant_id,
            "graph_id": found.graph_id,
        }
        use = Access(
            "assistants.read",
            self.store.checkpointer(),
            for_principal(self.store.items, self.principal, shared=self.authz.shared),
            config,
            self.principal,
        )
        async with self.registry.open(found.graph_id, use) as graph:
            yield found.graph_id, graph

    # -- changing --------------------------------------------------------------------

    async def create(self, draft: AssistantDraft) -> Assistant:
        """A new user assistant (version 1). A taken id is ``AssistantExists``, or with
        ``if_exists="do_nothing"`` the caller's existing assistant, unchanged (taken still
        when ``assistants.create``'s filter leaves it out)."""
        self._check_graph(draft.graph_id)
        if draft.assistant_id is None:
            assistant_id = str(uuid.uuid4())
        else:
            canonical = _uuid(draft.assistant_id)
            if canonical is None:
                raise InvalidAssistant(f"assistant_id must be a UUID, not {draft.assistant_id!r}")
            assistant_id = canonical
        asked = {k: v for k, v in dataclasses.asdict(draft).items() if v is not None}
        asked.update(assistant_id=assistant_id, metadata=dict(draft.metadata or {}))
        wanted = await self.authz.check("assistants", "create", asked)  # may stamp metadata
        taken = AssistantExists(f"Assistant {assistant_id} already exists")
        graph = self.system_graph(assistant_id)
        if graph is not None:
            system = system_assistant(graph, self.registry.error_of(graph))
            if draft.if_exists == "do_nothing" and kept([system], wanted):
                return system
            raise taken
        created, made = await self.store.create_assistant(
            assistant_id=assistant_id,
            graph_id=draft.graph_id,
            name=draft.name if draft.name is not None else "Untitled",
            description=draft.description,
            config=draft.config or {},
            context=draft.context or {},
            metadata=dict(asked.get("metadata") or {}),
            if_exists=draft.if_exists,
            principal=self.principal,
        )
        if not made and not kept([created], wanted):
            raise taken
        return created

    async def update(self, assistant_id: str, given: Mapping[str, Any]) -> Assistant:
        """A new version, made current, from the fields a client sent (``given``): they
        replace theirs, ``metadata`` is merged into the current metadata (with what
        ``assistants.update`` stamped). ``description: None`` clears it; other Nones are as
        if the field were absent."""
        changes = {k: v for k, v in given.items() if v is not None or k == "description"}
        asked = {**changes, "metadata": dict(changes.get("metadata") or {})}
        canonical = await self._changeable(assistant_id, "update", asked)
        if asked["metadata"]:
            changes["metadata"] = asked["metadata"]
        if "graph_id" in changes:
            self._check_graph(changes["graph_id"])
        return await self.store.update_assistant(canonical, changes, principal=self.owners.scope)

    async def delete(self, assistant_id: str) -> None:
        """Delete the assistant and its versions (not the threads that ran on it)."""
        canonical = await self._changeable(assistant_id, "delete", {})
        await self.store.delete_assistant(canonical, principal=self.owners.scope)

    async def set_latest(self, assistant_id: str, version: int) -> Assistant:
        """Make an earlier version current again (no new version is written)."""
        canonical = await self._changeable(assistant_id, "update", {"version": version})
        return await self.store.set_latest_assistant_version(
            canonical, version, principal=self.owners.scope
        )

    async def _changeable(self, assistant_id: str, action: str, value: dict[str, Any]) -> str:
        """``_writable``, and the app's handler for ``action`` asked about ``value`` (which
        it may stamp): an assistant its filter leaves out is not found."""
        canonical = self._writable(assistant_id)
        value["assistant_id"] = canonical
        wanted = await self.authz.check("assistants", action, value)
        if wanted:
            current = await self.store.get_assistant(canonical, self.owners.scope)
            if current is not None and not kept([current], wanted):
                raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
        return canonical

    def _writable(self, assistant_id: str) -> str:
        """The canonical id of an assistant a request may change: never a system one."""
        graph = self.system_graph(assistant_id)
        if graph is not None:
            raise SystemAssistantReadOnly(
                f"Assistant '{assistant_id}' is the system assistant of graph '{graph}' and "
                f"cannot be changed; create an assistant from graph '{graph}' instead"
            )
        canonical = _uuid(assistant_id)
        if canonical is None:
            raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
        return canonical

    def _check_graph(self, graph_id: str) -> None:
        if graph_id not in self.registry.names:
            raise UnknownGraph(
                f"Graph '{graph_id}' not found; configured graphs: {', '.join(self.registry.names)}"
            )
