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
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Query, Request, Response
from pydantic import BaseModel, Field

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.lg.schemas import Offset
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

SortBy = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]
SelectField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


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
    return await ctx.store.get_assistant(canonical, ctx.principal)


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
    found = await _lookup(ctx, assistant_id)
    if found is None:
        raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    return found


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


# -- bodies ------------------------------------------------------------------------------


class Filters(BaseModel):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None

    def matches(self, a: Assistant) -> bool:
        """The store's filter, for the system assistants (exact value per metadata key,
        case-insensitive name substring)."""
        return (
            all(k in a.metadata and a.metadata[k] == v for k, v in (self.metadata or {}).items())
            and (not self.graph_id or a.graph_id == self.graph_id)
            and (not self.name or self.name.lower() in a.name.lower())
        )


class SearchBody(Filters):
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0
    sort_by: SortBy | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[SelectField] | None = None


class CreateBody(BaseModel):
    graph_id: str
    assistant_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = None
    description: str | None = None


class PatchBody(BaseModel):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


class VersionsBody(BaseModel):
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0


class LatestBody(BaseModel):
    version: int = Field(ge=1)


# -- routes ------------------------------------------------------------------------------


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
    system = [a for a in system_assistants(ctx) if q.matches(a)]
    stored, stored_total = await ctx.store.search_assistants(
        principal=ctx.principal,
        metadata=q.metadata,
        graph_id=q.graph_id,
        name=q.name,
        limit=q.offset + q.limit,  # enough to place the system ones among them
        offset=0,
        sort_by=sort_by,
        sort_order="desc" if desc else "asc",
    )
    merged = sorted([*system, *stored], key=lambda a: a.assistant_id)
    merged.sort(key=lambda a: getattr(a, sort_by), reverse=desc)  # stable: ties by id
    page = merged[q.offset : q.offset + q.limit]
    total = len(system) + stored_total
    response.headers["X-Pagination-Total"] = str(total)
    if q.offset + len(page) < total:
        response.headers["X-Pagination-Next"] = str(q.offset + len(page))
    rows = [assistant_json(a) for a in page]
    if q.select:
        rows = [{k: v for k, v in r.items() if k in q.select} for r in rows]
    return rows


@router.post("/assistants/count")
async def count(request: Request, body: Annotated[Filters | None, Body()] = None) -> int:
    ctx = ctx_of(request)
    q = body or Filters()
    system = sum(1 for a in system_assistants(ctx) if q.matches(a))
    stored = await ctx.store.count_assistants(
        principal=ctx.principal, metadata=q.metadata, graph_id=q.graph_id, name=q.name
    )
    return system + stored


@router.post("/assistants")
async def create(request: Request, body: CreateBody) -> dict[str, Any]:
    """A new user assistant (version 1). ``assistant_id`` must be a UUID when given:
    a name would be read as a graph name. A taken id is 409, or with
    ``if_exists=do_nothing`` the caller's existing assistant, unchanged."""
    ctx = ctx_of(request)
    _check_graph(ctx, body.graph_id)
    if body.assistant_id is None:
        assistant_id = str(uuid.uuid4())
    else:
        canonical = _uuid(body.assistant_id)
        if canonical is None:
            raise InvalidAssistant(f"assistant_id must be a UUID, not {body.assistant_id!r}")
        assistant_id = canonical
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        if body.if_exists == "do_nothing":
            return assistant_json(system_assistant(graph, ctx.registry.error_of(graph)))
        raise AssistantExists(f"Assistant {assistant_id} already exists")
    created, _ = await ctx.store.create_assistant(
        assistant_id=assistant_id,
        graph_id=body.graph_id,
        name=body.name if body.name is not None else "Untitled",
        description=body.description,
        config=body.config or {},
        context=body.context or {},
        metadata=body.metadata or {},
        if_exists=body.if_exists,
        principal=ctx.principal,
    )
    return assistant_json(created)


@router.get("/assistants/{assistant_id}")
async def get(request: Request, assistant_id: AssistantId) -> dict[str, Any]:
    return assistant_json(await find_assistant(ctx_of(request), assistant_id))


@router.patch("/assistants/{assistant_id}")
async def update(request: Request, assistant_id: AssistantId, body: PatchBody) -> dict[str, Any]:
    """A new version, made current: given fields replace theirs, ``metadata`` is merged
    into the current metadata. ``description: null`` clears it; other nulls are as if
    the field were absent."""
    ctx = ctx_of(request)
    canonical = _writable(ctx, assistant_id)
    changes = {
        k: getattr(body, k)
        for k in body.model_fields_set
        if getattr(body, k) is not None or k == "description"
    }
    if "graph_id" in changes:
        _check_graph(ctx, changes["graph_id"])
    updated = await ctx.store.update_assistant(canonical, changes, principal=ctx.principal)
    return assistant_json(updated)


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete(
    request: Request, assistant_id: AssistantId, delete_threads: bool = Query(default=False)
) -> Response:
    """Delete the assistant and its versions; 204. ``delete_threads`` is accepted and
    ignored: outlast does not delete the threads that ran on the assistant (their runs
    and checkpoints stay, and remain readable through their threads)."""
    ctx = ctx_of(request)
    await ctx.store.delete_assistant(_writable(ctx, assistant_id), principal=ctx.principal)
    return Response(status_code=204)


@router.post("/assistants/{assistant_id}/versions")
async def versions(
    request: Request, assistant_id: AssistantId, body: Annotated[VersionsBody | None, Body()] = None
) -> list[dict[str, Any]]:
    """Newest first. A system assistant has one version, itself."""
    ctx = ctx_of(request)
    q = body or VersionsBody()
    graph = _system_graph(ctx, assistant_id)
    if graph is not None:
        only = system_assistant(graph, ctx.registry.error_of(graph))
        if q.offset or not Filters(metadata=q.metadata).matches(only):
            return []
        return [assistant_json(only, version=True)]
    canonical = _uuid(assistant_id)
    if canonical is None:
        raise AssistantNotFound(f"Assistant '{assistant_id}' not found")
    found = await ctx.store.list_assistant_versions(
        canonical, principal=ctx.principal, metadata=q.metadata, limit=q.limit, offset=q.offset
    )
    return [assistant_json(v, version=True) for v in found]


@router.post("/assistants/{assistant_id}/latest")
async def set_latest(
    request: Request, assistant_id: AssistantId, body: LatestBody
) -> dict[str, Any]:
    """Make an earlier version current again (no new version is written)."""
    ctx = ctx_of(request)
    canonical = _writable(ctx, assistant_id)
    latest = await ctx.store.set_latest_assistant_version(
        canonical, body.version, principal=ctx.principal
    )
    return assistant_json(latest)
