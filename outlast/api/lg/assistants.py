"""Assistants of the LangGraph face: ``/assistants/...`` as LangGraph's clients call them
(``langgraph_sdk``'s ``client.assistants``, ``RemoteGraph.get_graph``, Studio).

What each request does is the assistant service's (``service/assistants.py``: system
assistants derived from the graphs and read-only, 409; user assistants with versions,
their creator's; the app's ``assistants.*`` handlers); these routes translate the bodies
and the wire shape. Wherever a route takes an assistant id it also takes a graph name,
which stands for that graph's system assistant (``RemoteGraph("agent", ...)`` asks for
``/assistants/agent``). Bad input is refused before anything is written: an unknown graph
422, a taken id 409, an unknown assistant 404. An assistant's drawing, schemas and
subgraphs are served by ``assistant_graphs.py``; runs find their assistant through
``resolve_assistant``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request, Response

from outlast.api.context import AppContext
from outlast.api.edge import ctx_of
from outlast.api.lg.assistant_bodies import (
    CreateBody,
    Filters,
    LatestBody,
    PatchBody,
    SearchBody,
    VersionsBody,
)
from outlast.errors import InvalidAssistant, SystemAssistantReadOnly
from outlast.service.assistants import AssistantDraft, AssistantQuery
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


async def resolve_assistant(ctx: AppContext, assistant_id: str) -> Assistant:
    """The assistant a run names: a system assistant (by id or graph name) or one of the
    caller's own. Anything else is 422 (``InvalidAssistant``)."""
    return await ctx.assistants.resolve(assistant_id)


async def find_assistant(ctx: AppContext, assistant_id: str) -> Assistant:
    """The assistant as ``assistants.read`` lets the caller see it (else 404)."""
    return await ctx.assistants.get(assistant_id)


def _query(q: Filters) -> AssistantQuery:
    return AssistantQuery(metadata=q.metadata, graph_id=q.graph_id, name=q.name)


# -- routes ------------------------------------------------------------------------------


@router.post("/assistants/search")
async def search(
    request: Request, response: Response, body: Annotated[SearchBody | None, Body()] = None
) -> list[dict[str, Any]]:
    """The system assistants and the caller's own, one page, sorted the same whichever
    kind its rows are. ``X-Pagination-Total`` counts every match;
    ``X-Pagination-Next`` is the next page's offset, sent only when there is one."""
    q = body or SearchBody()
    page, total = await ctx_of(request).assistants.search(
        _query(q), limit=q.limit, offset=q.offset, sort_by=q.sort_by, sort_order=q.sort_order
    )
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
    return await ctx_of(request).assistants.count(_query(body or Filters()))


@router.post("/assistants")
async def create(request: Request, body: CreateBody) -> dict[str, Any]:
    """A new user assistant (version 1). ``assistant_id`` must be a UUID when given:
    a name would be read as a graph name. A taken id is 409, or with
    ``if_exists=do_nothing`` the caller's existing assistant, unchanged (409 still when
    ``assistants.create``'s filter leaves it out)."""
    draft = AssistantDraft(**body.model_dump())
    return assistant_json(await ctx_of(request).assistants.create(draft))


@router.get("/assistants/{assistant_id}")
async def get(request: Request, assistant_id: AssistantId) -> dict[str, Any]:
    return assistant_json(await find_assistant(ctx_of(request), assistant_id))


@router.patch("/assistants/{assistant_id}")
async def update(request: Request, assistant_id: AssistantId, body: PatchBody) -> dict[str, Any]:
    """A new version, made current: given fields replace theirs, ``metadata`` is merged
    into the current metadata (with what ``assistants.update`` stamped). ``description:
    null`` clears it; other nulls are as if the field were absent."""
    given = {k: getattr(body, k) for k in body.model_fields_set}
    return assistant_json(await ctx_of(request).assistants.update(assistant_id, given))


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete(
    request: Request, assistant_id: AssistantId, delete_threads: bool = Query(default=False)
) -> Response:
    """Delete the assistant and its versions; 204. ``delete_threads`` is accepted and
    ignored: outlast does not delete the threads that ran on the assistant (their runs
    and checkpoints stay, and remain readable through their threads)."""
    await ctx_of(request).assistants.delete(assistant_id)
    return Response(status_code=204)


@router.post("/assistants/{assistant_id}/versions")
async def versions(
    request: Request, assistant_id: AssistantId, body: Annotated[VersionsBody | None, Body()] = None
) -> list[dict[str, Any]]:
    """Newest first. A system assistant has one version, itself. ``assistants.read``'s
    filter is matched against each version's metadata, as LangGraph's server does."""
    q = body or VersionsBody()
    found = await ctx_of(request).assistants.versions(
        assistant_id, metadata=q.metadata, limit=q.limit, offset=q.offset
    )
    return [assistant_json(v, version=True) for v in found]


@router.post("/assistants/{assistant_id}/latest")
async def set_latest(
    request: Request, assistant_id: AssistantId, body: LatestBody
) -> dict[str, Any]:
    """Make an earlier version current again (no new version is written)."""
    latest = await ctx_of(request).assistants.set_latest(assistant_id, body.version)
    return assistant_json(latest)
