"""Assistants of the LangGraph face: ``/assistants/...`` as LangGraph's clients call them
(``langgraph_sdk``'s ``client.assistants``, ``RemoteGraph.get_graph``, Studio).

Two kinds, one vocabulary:

- **System assistants**, one per configured graph, id ``store.base.system_assistant_id``
  (``uuid5`` in the namespace LangGraph's server uses, so ids that clients and Studio remember stay
  valid here). They are derived from the registry, not stored, and every principal sees
  them. They cannot be changed or deleted: such a request is refused with **409**
  (Conflict: the assistant exists, in a state the request cannot change; LangGraph's
  clients raise ``ConflictError`` and show ``detail``). Create your own from the graph.
- **User assistants**, stored with their versions (``store/assistants.py``) and visible
  only to the principal that created them; another principal's assistant answers 404.

Wherever a route takes an assistant id it also takes a graph name, which stands for that
graph's system assistant (``RemoteGraph("agent", ...)`` asks for ``/assistants/agent``).
Bad input is refused before anything is written: an unknown graph 422, a taken id 409,
an unknown assistant 404. An assistant's drawing, schemas and subgraphs are served by
``assistant_graphs.py``; runs find their assistant through ``resolve_assistant``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request, Response

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.lg import assistant_authz as authz
from outlast.api.lg.assistant_bodies import (
    CreateBody,
    Filters,
    LatestBody,
    PatchBody,
    SearchBody,
    VersionsBody,
)
from outlast.errors import OutlastError, UnknownGraph
from outlast.store.assistants import AssistantExists, AssistantNotFound
from outlast.store.base import Assistant, system_assistant_id

__all__ = [
    "AssistantExists",
    "AssistantNotFound",
    "InvalidAssistant",
    "SystemAssistantReadOnly",
    "assistant_json",
    "find_assistant",
    "resolve_assistant",
    "router",
    "system_assistant_id",
]

router = APIRouter(tags=["langgraph"])
# A graph name or an assistant id (a UUID).
AssistantId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")]
Namespace = Annotated[str, Path(max_length=2000)]

# System assistants are as old as this process: they are made from its configuration.
STARTED = dt.datetime.now(dt.UTC)
SYSTEM_METADATA = {"created_by": "system"}


class InvalidAssistant(OutlastError):
    status = 422
    title = "Invalid assistant"


class SystemAssistantReadOnly(OutlastError):
    status = 409
    title = "System assistant"


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


def system_assistants(ctx: AppContext) -> list[Assistant]:
    return [system_assistant(g, ctx.registry.error_of(g)) for g in ctx.registry.names]


def assistant_json(a: Assistant, *, version: bool = False) -> dict[str, Any]:
    """The wire shape; an ``AssistantVersion`` (``version=True``) has no ``updated_at``."""
    body: dict[str, Any] = {
        "assistant_id": a.assistant_id,
        "graph_id": a.graph_id,
        "config": a.config,
        "context": a.context,
        "metadata": a.metadata,
        "name": a.name,
        "description": a.description,
        "version": a.version,
        "created_at": a.created_at.isoformat(timespec="microseconds"),
    }
    if not version:
        body["updated_at"] = a.updated_at.isoformat(timespec="microseconds")
    return body


def _uuid(value: str) -> str | None:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _system_graph(ctx: AppContext, assistant_id: str) -> str | None:
    """The graph whose system assistant ``assistant_id`` names (an id or a graph name)."""
    names = ctx.registry.names
    if assistant_id in names:
        return assistant_id
    canonical = _uuid(assistant_id)
    return next((g for g in names if system_assistant_id(g) == canonical), None)


async def _lookup(ctx: AppContext, assistant_id: str) -> Assistant | None:
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        return system_assistant(graph, ctx.registry.error_of(graph))
    canonical = _uuid(assistant_id)
    if canonical is None:
        return None
    return await ctx.store.get_assistant(canonical, ctx.runs.owners.scope)


async def resolve_assistant(ctx: AppContext, assistant_id: str) -> Assistant:
    """The assistant a run names: a system assistant (by id or graph name) or one of the
    caller's own. Anything else is 422, the status LangGraph's server gives a run on an
    assistant it cannot resolve."""
    found = await _lookup(ctx, assistant_id)
    if found is None:
        raise InvalidAssistant(
            f"Invalid assistant: '{assistant_id}'. Must be either a valid assistant UUID "
            f"or one of the registered graphs: {', '.join(ctx.registry.names)}"
        )
    return found


async def find_assistant(ctx: AppContext, assistant_id: str) -> Assistant:
    """The assistant as ``assistants.read`` lets the caller see it (else 404)."""
    found = await _lookup(ctx, assistant_id)
    if found is None or not await authz.admits(ctx, found, "read"):
        raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    return found


async def _changeable(
    ctx: AppContext, assistant_id: str, action: str, value: dict[str, Any]
) -> str:
    """``_writable``, and the app's handler for ``action`` asked about ``value`` (which
    it may stamp): an assistant its filter leaves out is not found."""
    canonical = _writable(ctx, assistant_id)
    value["assistant_id"] = canonical
    wanted = await authz.stamped(ctx, action, value)
    if wanted:
        current = await ctx.store.get_assistant(canonical, ctx.runs.owners.scope)
        if current is not None and not authz.kept([current], wanted):
            raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    return canonical


def _writable(ctx: AppContext, assistant_id: str) -> str:
    """The canonical id of an assistant a request may change: never a system one."""
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        raise SystemAssistantReadOnly(
            f"Assistant '{assistant_id}' is the system assistant of graph '{graph}' and "
            f"cannot be changed; create an assistant from graph '{graph}' instead"
        )
    canonical = _uuid(assistant_id)
    if canonical is None:
        raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    return canonical


def _check_graph(ctx: AppContext, graph_id: str) -> None:
    if graph_id not in ctx.registry.names:
        raise UnknownGraph(
            f"Graph '{graph_id}' not found; configured graphs: {', '.join(ctx.registry.names)}"
        )


# -- routes ------------------------------------------------------------------------------


async def _matching(
    ctx: AppContext, q: Filters, asked: dict[str, Any], sort_by: str, desc: bool, enough: int
) -> tuple[list[Assistant], int]:
    """The system assistants and enough of the caller's own that match the query and
    ``assistants.search``'s filter (all of them when there is a filter: it is matched
    here), unsorted; and how many match in all."""
    wanted = await authz.search_filter(ctx, asked)
    system = authz.kept([a for a in system_assistants(ctx) if q.matches(a)], wanted)
    stored, stored_total = await ctx.store.search_assistants(
        principal=ctx.runs.owners.scope,
        metadata=q.metadata,
        graph_id=q.graph_id,
        name=q.name,
        limit=enough if wanted is None else authz.EVERY,
        offset=0,
        sort_by=sort_by,
        sort_order="desc" if desc else "asc",
    )
    if wanted is not None:
        stored = authz.kept(stored, wanted)
        stored_total = len(stored)
    return [*system, *stored], len(system) + stored_total


@router.post("/assistants/search")
async def search(
    request: Request, response: Response, body: Annotated[SearchBody | None, Body()] = None
) -> list[dict[str, Any]]:
    """The system assistants and the caller's own, one page. The stored ones come sorted
    from the database, the system ones are merged in with the same order (ties by id),
    so a page is the same whichever kind its rows are. ``X-Pagination-Total`` counts
    every match; ``X-Pagination-Next`` is the next page's offset, sent only when there
    is one."""
    ctx = ctx_of(request)
    q = body or SearchBody()
    sort_by = q.sort_by or "created_at"
    desc = (q.sort_order or "desc") == "desc"
    asked = {"graph_id": q.graph_id, "metadata": q.metadata, "limit": q.limit, "offset": q.offset}
    # enough stored rows to place the system ones among them
    merged, total = await _matching(ctx, q, asked, sort_by, desc, q.offset + q.limit)
    merged.sort(key=lambda a: a.assistant_id)
    merged.sort(key=lambda a: getattr(a, sort_by), reverse=desc)  # stable: ties by id
    page = merged[q.offset : q.offset + q.limit]
    response.headers["X-Pagination-Total"] = str(total)
    if q.offset + len(page) < total:
        response.headers["X-Pagination-Next"] = str(q.offset + len(page))
    rows = [assistant_json(a) for a in page]
    if q.select:
        rows = [{k: v for k, v in r.items() if k in q.select} for r in rows]
    return rows


@router.post("/assistants/count")
async def count(request: Request, body: Annotated[Filters | None, Body()] = None) -> int:
    """As many as a search finds (``assistants.search`` is asked)."""
    ctx = ctx_of(request)
    q = body or Filters()
    asked = {"graph_id": q.graph_id, "metadata": q.metadata}
    return (await _matching(ctx, q, asked, "created_at", True, 1))[1]


@router.post("/assistants")
async def create(request: Request, body: CreateBody) -> dict[str, Any]:
    """A new user assistant (version 1). ``assistant_id`` must be a UUID when given:
    a name would be read as a graph name. A taken id is 409, or with
    ``if_exists=do_nothing`` the caller's existing assistant, unchanged (409 still when
    ``assistants.create``'s filter leaves it out)."""
    ctx = ctx_of(request)
    _check_graph(ctx, body.graph_id)
    if body.assistant_id is None:
        assistant_id = str(uuid.uuid4())
    else:
        canonical = _uuid(body.assistant_id)
        if canonical is None:
            raise InvalidAssistant(f"assistant_id must be a UUID, not {body.assistant_id!r}")
        assistant_id = canonical
    asked = body.model_dump(exclude_none=True)
    asked.update(assistant_id=assistant_id, metadata=dict(body.metadata or {}))
    wanted = await authz.stamped(ctx, "create", asked)  # may stamp the metadata
    taken = AssistantExists(f"Assistant {assistant_id} already exists")
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        system = system_assistant(graph, ctx.registry.error_of(graph))
        if body.if_exists == "do_nothing" and authz.kept([system], wanted):
            return assistant_json(system)
        raise taken
    created, made = await ctx.store.create_assistant(
        assistant_id=assistant_id,
        graph_id=body.graph_id,
        name=body.name if body.name is not None else "Untitled",
        description=body.description,
        config=body.config or {},
        context=body.context or {},
        metadata=dict(asked.get("metadata") or {}),
        if_exists=body.if_exists,
        principal=ctx.principal,
    )
    if not made and not authz.kept([created], wanted):
        raise taken
    return assistant_json(created)


@router.get("/assistants/{assistant_id}")
async def get(request: Request, assistant_id: AssistantId) -> dict[str, Any]:
    return assistant_json(await find_assistant(ctx_of(request), assistant_id))


@router.patch("/assistants/{assistant_id}")
async def update(request: Request, assistant_id: AssistantId, body: PatchBody) -> dict[str, Any]:
    """A new version, made current: given fields replace theirs, ``metadata`` is merged
    into the current metadata (with what ``assistants.update`` stamped). ``description:
    null`` clears it; other nulls are as if the field were absent."""
    ctx = ctx_of(request)
    changes = {
        k: getattr(body, k)
        for k in body.model_fields_set
        if getattr(body, k) is not None or k == "description"
    }
    asked = {**changes, "metadata": dict(changes.get("metadata") or {})}
    canonical = await _changeable(ctx, assistant_id, "update", asked)
    if asked["metadata"]:
        changes["metadata"] = asked["metadata"]
    if "graph_id" in changes:
        _check_graph(ctx, changes["graph_id"])
    updated = await ctx.store.update_assistant(canonical, changes, principal=ctx.runs.owners.scope)
    return assistant_json(updated)


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete(
    request: Request, assistant_id: AssistantId, delete_threads: bool = Query(default=False)
) -> Response:
    """Delete the assistant and its versions; 204. ``delete_threads`` is accepted and
    ignored: outlast does not delete the threads that ran on the assistant (their runs
    and checkpoints stay, and remain readable through their threads)."""
    ctx = ctx_of(request)
    canonical = await _changeable(ctx, assistant_id, "delete", {})
    await ctx.store.delete_assistant(canonical, principal=ctx.runs.owners.scope)
    return Response(status_code=204)


@router.post("/assistants/{assistant_id}/versions")
async def versions(
    request: Request, assistant_id: AssistantId, body: Annotated[VersionsBody | None, Body()] = None
) -> list[dict[str, Any]]:
    """Newest first. A system assistant has one version, itself. ``assistants.read``'s
    filter is matched against each version's metadata, as LangGraph's server does."""
    ctx = ctx_of(request)
    q = body or VersionsBody()
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        only = system_assistant(graph, ctx.registry.error_of(graph))
        shown = Filters(metadata=q.metadata).matches(only)
        if q.offset or not shown or not await authz.admits(ctx, only, "read"):
            return []
        return [assistant_json(only, version=True)]
    canonical = _uuid(assistant_id)
    if canonical is None:
        raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    wanted = await ctx.authz.filter("assistants", "read", {"assistant_id": canonical})
    found = await ctx.store.list_assistant_versions(
        canonical,
        principal=ctx.runs.owners.scope,
        metadata=q.metadata,
        limit=q.limit if wanted is None else authz.EVERY,
        offset=q.offset if wanted is None else 0,
    )
    if wanted is not None:
        found = authz.kept(found, wanted)[q.offset : q.offset + q.limit]
    return [assistant_json(v, version=True) for v in found]


@router.post("/assistants/{assistant_id}/latest")
async def set_latest(
    request: Request, assistant_id: AssistantId, body: LatestBody
) -> dict[str, Any]:
    """Make an earlier version current again (no new version is written)."""
    ctx = ctx_of(request)
    canonical = await _changeable(ctx, assistant_id, "update", {"version": body.version})
    latest = await ctx.store.set_latest_assistant_version(
        canonical, body.version, principal=ctx.runs.owners.scope
    )
    return assistant_json(latest)
