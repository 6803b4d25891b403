"""The app's ``@auth.on.assistants`` handlers (``service/authz.py``) on the assistants
routes, as LangGraph's server asks them: ``create`` (may stamp ``metadata``; an existing
assistant its filter leaves out is a 409, as a taken id), ``read`` (get, graph, schemas,
subgraphs, versions), ``update`` (patch, set latest), ``delete``, ``search`` (search,
count). A filter is matched against the assistant's metadata: an assistant it leaves out
does not exist for the caller (404, absent from a search and a count).

System assistants are filtered too, against their ``{"created_by": "system"}``, as
LangGraph's server filters the assistants it made for each graph: handlers narrow what a
caller sees and never widen it. An app whose filter is an owner's and that still wants
the graphs listed answers ``assistants.read``/``search`` without a filter. A run names
its assistant without ``assistants.read`` (``resolve_assistant``): the run is
``threads.create_run``'s to allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from outlast.api.context import AppContext
from outlast.service.authz import Filter, matches
from outlast.store.base import Assistant

# A stored search read whole, to filter in Python (the handler's filter has operators
# the store's metadata filter has not): the principal's assistants, as thread searches do.
EVERY = 1_000_000


async def admits(
    ctx: AppContext, found: Assistant, action: str, value: dict[str, Any] | None = None
) -> bool:
    """Whether the handler for ``action`` lets the caller see ``found``."""
    asked = {"assistant_id": found.assistant_id, **(value or {})}
    return await ctx.authz.admits("assistants", action, asked, found.metadata)


async def search_filter(ctx: AppContext, asked: dict[str, Any]) -> Filter | None:
    """``assistants.search``'s filter (``None``: everything the query matches)."""
    return await ctx.authz.filter("assistants", "search", asked)


def kept(found: Sequence[Assistant], wanted: Filter | None) -> list[Assistant]:
    return [a for a in found if matches(a.metadata, wanted)]


async def stamped(ctx: AppContext, action: str, value: dict[str, Any]) -> Filter | None:
    """Ask ``create``/``update`` about ``value``, which the handler may change in place
    (its ``metadata`` is what gets stored)."""
    return await ctx.authz.check("assistants", action, value)
