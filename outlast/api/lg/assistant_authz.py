"""The app's ``@auth.on.assistants`` handlers (``service/authz.py``) on the assistants
routes, as LangGraph's server asks them: ``create`` (may stamp ``metadata``; an existing
assistant its filter leaves out is a 409, as a taken id), ``read`` (get, graph, schemas,
subgraphs, versions), ``update`` (patch, set latest), ``delete``, ``search`` (search,
count). A filter is matched against the assistant's metadata: an assistant it leaves out
does not exist for the caller (404, absent from a search and a count).

System assistants are filtered too, against their ``{"created_by": "system"}``, as
LangGraph's server filters the assistants it made for each graph: handlers narrow what a
caller sees and never widen it. An app whose filter is an owner's and that still wants
the graphs listed answers ``assistants.read``/``search`` without a filter.

A run on one of the caller's assistants takes ``assistants.read`` as well as
``threads.create_run`` (``runnable``), as on LangGraph's fixed server: before
GHSA-jfj5-wrj9-63x4 an assistant that ``assistants.search`` listed could be run by a
caller ``read`` refused. A run that names a graph (its system assistant) is
``threads.create_run``'s alone to allow, as there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from outlast.api.context import AppContext
from outlast.service.authz import Filter, matches
from outlast.store.assistants import AssistantNotFound
from outlast.store.base import Assistant, system_assistant_id

# A stored search read whole, to filter in Python (the handler's filter has operators
# the store's metadata filter has not): the principal's assistants, as thread searches do.
EVERY = 1_000_000


async def admits(
    ctx: AppContext, found: Assistant, action: str, value: dict[str, Any] | None = None
) -> bool:
    """Whether the handler for ``action`` lets the caller see ``found``."""
    asked = {"assistant_id": found.assistant_id, **(value or {})}
    return await ctx.authz.admits("assistants", action, asked, found.metadata)


async def runnable(ctx: AppContext, found: Assistant, named: str) -> None:
    """Refuse a run on ``found`` (``named`` so by the request) that ``assistants.read``
    does not let the caller see: 404 as for a read, 403 when the handler says False."""
    if found.assistant_id == system_assistant_id(found.graph_id):
        return  # by its id, not its metadata: a caller may write created_by: system
    if not await admits(ctx, found, "read"):
        raise AssistantNotFound(f"Assistant '{named}' not found")


async def search_filter(ctx: AppContext, asked: dict[str, Any]) -> Filter | None:
    """``assistants.search``'s filter (``None``: everything the query matches)."""
    return await ctx.authz.filter("assistants", "search", asked)


def kept(found: Sequence[Assistant], wanted: Filter | None) -> list[Assistant]:
    return [a for a in found if matches(a.metadata, wanted)]


async def stamped(ctx: AppContext, action: str, value: dict[str, Any]) -> Filter | None:
    """Ask ``create``/``update`` about ``value``, which the handler may change in place
    (its ``metadata`` is what gets stored)."""
    return await ctx.authz.check("assistants", action, value)
