"""``/store``: LangGraph's Store API (``client.store``, Studio's Memory tab).

The items are LangGraph's own store (``store/items.py``), seen through the caller's
principal: another principal's items, namespaces included, do not exist for this one.
Every body is checked in full before the store is called, so a refused request writes
nothing; the bodies are exactly what the Python and JS SDKs send, and anything else is
refused rather than ignored.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from langgraph.store.base import NOT_PROVIDED, BaseStore, InvalidNamespaceError
from pydantic import BaseModel, ConfigDict, Field, model_validator

from outlast.api.edge import ctx_of
from outlast.api.lg.schemas import Offset
from outlast.api.schemas import _check_storable
from outlast.errors import OutlastError
from outlast.store.items import check_filter, check_labels, for_principal

router = APIRouter(tags=["langgraph"])

Key = Annotated[str, Field(min_length=1)]
Limit = Annotated[int, Field(ge=1, le=1000)]
# In minutes, from a second to a century: outside that, the stores' date arithmetic fails
# (Postgres cannot read the exponent Python writes for a tiny interval; SQLite overflows).
MIN_TTL, MAX_TTL = 1 / 60, 100 * 365 * 24 * 60


class InvalidNamespace(OutlastError):
    status = 422
    title = "Invalid namespace"


class InvalidFilter(OutlastError):
    status = 422
    title = "Invalid filter"


class MissingKey(OutlastError):
    status = 400
    title = "Missing key"


class _Body(BaseModel):
    # Strict: true is not a limit, "1" is not an offset.
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="after")
    def _storable(self) -> _Body:
        # NUL, lone surrogates, NaN: a store fails on them (a 500) or keeps them unfaithfully.
        dumped = self.model_dump()
        _check_storable(dumped)
        _check_ints(dumped)
        return self


def _check_ints(value: Any) -> None:
    """The stores encode values and filters with orjson, which has 64-bit integers only."""
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        raise ValueError("integers must fit in 64 bits")
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            _check_ints(item)


class PutItem(_Body):
    namespace: list[str]
    key: Key
    value: dict[str, Any]
    # The fields to embed (``store.index``; False: none); without an index, ignored.
    index: Literal[False] | list[str] | None = None
    ttl: float | None = Field(default=None, ge=MIN_TTL, le=MAX_TTL, description="minutes")


class DeleteItem(_Body):
    namespace: list[str]
    key: Key


class SearchItems(_Body):
    namespace_prefix: list[str] = Field(default_factory=list)
    filter: dict[str, Any] | None = None
    limit: Limit = 10
    offset: Offset = 0
    # Ranks by similarity with ``store.index`` (``score``); without one, not used.
    query: str | None = None
    refresh_ttl: bool | None = None


class ListNamespaces(_Body):
    prefix: list[str] | None = None
    suffix: list[str] | None = None
    # Postgres reads it as an int4, after the hidden label adds one.
    max_depth: Annotated[int, Field(ge=1, le=2**31 - 2)] | None = None
    limit: Limit = 100
    offset: Offset = 0


def _items(request: Request) -> BaseStore:
    ctx = ctx_of(request)
    return for_principal(ctx.store.items, ctx.principal, shared=ctx.authz.shared)


async def _asked(request: Request, action: str, namespace: Any, **value: Any) -> Any:
    """The app's ``store`` handler for ``action``: the namespace as it rewrote it (its
    usual work: the user's identity in front), or as asked. The value has the keys
    LangGraph's server gives the handler (``namespace`` first, then the request's)."""
    asked = {"namespace": namespace, **value}
    await ctx_of(request).authz.check("store", action, asked)
    found = asked.get("namespace")
    return tuple(found) if found is not None else None


def _namespace(labels: list[str], *, what: str = "namespace") -> tuple[str, ...]:
    try:
        return check_labels(labels)
    except InvalidNamespaceError as exc:
        raise InvalidNamespace(f"{what}: {exc}") from None


def _path(labels: list[str] | None, what: str) -> tuple[str, ...] | None:
    # "*" stands for any one label in a list_namespaces match condition.
    if labels is None:
        return None
    _namespace([label for label in labels if label != "*"], what=what)
    return tuple(labels)


@router.put("/store/items", status_code=204)
async def put_item(request: Request, body: PutItem) -> Response:
    namespace = _namespace(body.namespace)
    if not namespace:
        raise InvalidNamespace("namespace: an item needs at least one label")
    if namespace[0] == "langgraph":
        raise InvalidNamespace('namespace: the root label "langgraph" is reserved')
    namespace = await _asked(request, "put", namespace, key=body.key, value=body.value)
    # The SDKs always send ``ttl`` (null when not given): null is the deployment's
    # ``store.ttl.default_ttl``, as on LangGraph's server, not "never expires".
    ttl = NOT_PROVIDED if body.ttl is None else body.ttl
    await _items(request).aput(namespace, body.key, body.value, body.index, ttl=ttl)
    return Response(status_code=204)


@router.get("/store/items")
async def get_item(
    request: Request,
    namespace: str = "",
    key: str | None = None,
    refresh_ttl: Annotated[bool | None, Query()] = None,
) -> dict[str, Any] | None:
    """200 ``null`` for a missing item, as LangGraph's server answers (the SDKs return
    ``None``); labels come dot-joined, so one cannot contain a dot."""
    if not key:
        raise MissingKey("key is required")
    try:
        _check_storable([namespace, key])
    except ValueError as exc:
        raise InvalidNamespace(f"namespace or key: {exc}") from None
    labels = _namespace(namespace.split(".") if namespace else [])
    labels = await _asked(request, "get", labels, key=key)
    item = await _items(request).aget(labels, key, refresh_ttl=refresh_ttl)
    return None if item is None else item.dict()


@router.delete("/store/items", status_code=204)
async def delete_item(request: Request, body: DeleteItem) -> Response:
    namespace = await _asked(request, "delete", _namespace(body.namespace), key=body.key)
    await _items(request).adelete(namespace, body.key)
    return Response(status_code=204)


@router.post("/store/items/search")
async def search_items(request: Request, body: SearchItems) -> dict[str, Any]:
    prefix = _namespace(body.namespace_prefix, what="namespace_prefix")
    try:
        check_filter(body.filter)
    except ValueError as exc:
        raise InvalidFilter(str(exc)) from None
    prefix = await _asked(
        request,
        "search",
        prefix,
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        query=body.query,
        refresh_ttl=body.refresh_ttl,
    )
    found = await _items(request).asearch(
        prefix,
        query=body.query,
        filter=body.filter,
        limit=body.limit,
        offset=body.offset,
        refresh_ttl=body.refresh_ttl,
    )
    return {"items": [item.dict() for item in found]}


@router.post("/store/namespaces")
async def list_namespaces(request: Request, body: ListNamespaces) -> dict[str, Any]:
    prefix = await _asked(
        request,
        "list_namespaces",
        _path(body.prefix, "prefix"),
        suffix=body.suffix,
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    found = await _items(request).alist_namespaces(
        prefix=prefix,
        suffix=_path(body.suffix, "suffix"),
        max_depth=body.max_depth,
        limit=body.limit,
        offset=body.offset,
    )
    return {"namespaces": [list(ns) for ns in found]}
