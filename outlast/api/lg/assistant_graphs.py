"""What an assistant's graph looks like, for Studio and ``RemoteGraph.get_graph``: its
drawable JSON (nodes and edges, subgraphs expanded with ``xray``), its JSON Schemas and
those of its subgraphs (``/assistants/{id}/graph``, ``/schemas``, ``/subgraphs``). Read
from the assistant's graph (a factory's built for ``assistants.read``); nothing runs.

Schemas are best effort, each on its own: a schema LangGraph cannot produce is ``null``
and the others are still given (a graph Studio cannot describe fully is still one it can
open). One case is common enough to repair: a state declared with ``typing.TypedDict``,
which pydantic refuses on Python < 3.12; it is rebuilt as a ``typing_extensions``
TypedDict with the same fields, docstring and required keys, which gives the schema
LangGraph itself gives on 3.12. Past that, the schema comes from the graph's channels.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Annotated, Any, get_type_hints

import pydantic
import typing_extensions
from fastapi import APIRouter, Path, Query, Request
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from outlast.api.edge import ctx_of
from outlast.errors import OutlastError
from outlast.jsonable import to_jsonable

log = logging.getLogger(__name__)

router = APIRouter(tags=["langgraph"])
# A graph name or an assistant id (a UUID).
AssistantId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.:\-]{1,200}$")]
Namespace = Annotated[str, Path(max_length=2000)]

Schema = dict[str, Any] | None
SCHEMAS = ("input_schema", "output_schema", "state_schema", "config_schema", "context_schema")


class BadXray(OutlastError):
    status = 422
    title = "Invalid xray"


def parse_xray(value: str) -> bool | int:
    """``xray`` as the SDKs send it: ``true`` / ``false`` (httpx writes Python booleans
    in lower case) or a depth; depth 0 is no expansion, like ``false``."""
    text = value.strip().lower()
    if text in ("true", "false"):
        return text == "true"
    try:
        depth = int(text)
    except ValueError:
        raise BadXray(f"xray must be true, false or a depth (an integer), not {value!r}") from None
    if depth < 0:
        raise BadXray(f"xray depth must be 0 or more, not {depth}")
    return depth if depth > 0 else False


def drawable(graph: Pregel[Any, Any, Any, Any], xray: bool | int) -> dict[str, Any]:
    """``{"nodes": [...], "edges": [...]}``, what ``RemoteGraph`` parses back into a
    ``Graph``; with ``xray`` a subgraph's nodes appear as ``<subgraph>:<node>``. Node
    data is made JSON-safe (it may hold schema classes or arbitrary metadata)."""
    data = graph.get_graph(xray=xray).to_json()
    shown: dict[str, Any] = to_jsonable(data)
    return shown


def _ported(typ: Any) -> Any:
    """A ``typing.TypedDict`` rebuilt with ``typing_extensions``, which pydantic accepts
    on every Python version; anything else unchanged."""
    if not typing_extensions.is_typeddict(typ):
        return typ
    hints = get_type_hints(typ, include_extras=True)
    required = getattr(typ, "__required_keys__", frozenset(hints))
    fields = {
        k: typing_extensions.Required[v] if k in required else typing_extensions.NotRequired[v]
        for k, v in hints.items()
    }
    make: Any = typing_extensions.TypedDict  # the functional form, with a computed name
    ported = make(typ.__name__, fields)
    ported.__doc__ = typ.__doc__
    ported.__module__ = typ.__module__
    return ported


def _of_type(typ: Any) -> dict[str, Any]:
    if isinstance(typ, type) and issubclass(typ, pydantic.BaseModel):
        return typ.model_json_schema()
    return pydantic.TypeAdapter(_ported(typ)).json_schema()


def _of_fields(name: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    definitions: dict[str, Any] = {k: (v, None) for k, v in fields.items()}
    model: type[pydantic.BaseModel] = pydantic.create_model(name, **definitions)
    return model.model_json_schema()


def _first(what: str, *attempts: Callable[[], Schema]) -> Schema:
    for attempt in attempts:
        try:
            return attempt()
        except Exception as exc:  # any failure: try the next way, then give null
            log.debug("schema %s: %s: %s", what, type(exc).__name__, exc)
    return None


def _builder_schema(graph: Pregel[Any, Any, Any, Any], which: str) -> Schema:
    """The schema of the builder's ``which`` (state, input, output) type: from the type,
    else from its fields that are channels of the graph."""
    if not isinstance(graph, CompiledStateGraph):
        return None
    builder = graph.builder
    typ = getattr(builder, f"{which}_schema")
    fields = {k: v for k, v in builder.schemas.get(typ, {}).items() if k in graph.channels}
    name = getattr(typ, "__name__", which.capitalize())
    return _first(which, lambda: _of_type(typ), lambda: _of_fields(name, fields))


def _config_schema(graph: Pregel[Any, Any, Any, Any]) -> Schema:
    # Deprecated in LangGraph 1.0 in favour of context, but still what Studio shows under
    # "configurable" for graphs that declare a config schema.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return graph.config_schema().model_json_schema()


def _context_schema(graph: Pregel[Any, Any, Any, Any]) -> Schema:
    if graph.context_schema is None:
        return None
    return _of_type(graph.context_schema)


def schemas(graph_id: str, graph: Any) -> dict[str, Any]:
    """``GraphSchema``: the five JSON Schemas of a graph (null where impossible)."""
    if not isinstance(graph, Pregel):  # a remote subgraph: nothing to read locally
        return {"graph_id": graph_id, **dict.fromkeys(SCHEMAS)}
    return {
        "graph_id": graph_id,
        "input_schema": _first(
            "input", graph.get_input_jsonschema, lambda: _builder_schema(graph, "input")
        ),
        "output_schema": _first(
            "output", graph.get_output_jsonschema, lambda: _builder_schema(graph, "output")
        ),
        "state_schema": _builder_schema(graph, "state"),
        "config_schema": _first("config", lambda: _config_schema(graph)),
        "context_schema": _first(
            "context", graph.get_context_jsonschema, lambda: _context_schema(graph)
        ),
    }


def subgraph_schemas(
    graph_id: str, graph: Pregel[Any, Any, Any, Any], namespace: str | None, recurse: bool
) -> dict[str, Any]:
    """``{"<namespace>": GraphSchema}``: the subgraphs (``|``-separated namespaces when
    nested), or the one at ``namespace``. Each is labelled with the assistant's graph."""
    return {
        ns: schemas(graph_id, sub)
        for ns, sub in graph.get_subgraphs(namespace=namespace, recurse=recurse)
    }


# -- routes ------------------------------------------------------------------------------


@router.get("/assistants/{assistant_id}/graph")
async def graph_route(
    request: Request, assistant_id: AssistantId, xray: str = Query(default="false")
) -> dict[str, Any]:
    """The drawable graph; ``xray`` (``true`` or a depth) expands subgraphs into their
    nodes, named ``<subgraph>:<node>``."""
    depth = parse_xray(xray)
    async with assistant_graph(request, assistant_id) as (_, graph):
        return drawable(graph, depth)


@router.get("/assistants/{assistant_id}/schemas")
async def schemas_route(request: Request, assistant_id: AssistantId) -> dict[str, Any]:
    async with assistant_graph(request, assistant_id) as (graph_id, graph):
        return schemas(graph_id, graph)


@router.get("/assistants/{assistant_id}/subgraphs")
async def subgraphs_route(
    request: Request, assistant_id: AssistantId, recurse: bool = Query(default=False)
) -> dict[str, Any]:
    return await _subgraphs_of(request, assistant_id, None, recurse)


@router.get("/assistants/{assistant_id}/subgraphs/{namespace}")
async def subgraph_route(
    request: Request,
    assistant_id: AssistantId,
    namespace: Namespace,
    recurse: bool = Query(default=False),
) -> dict[str, Any]:
    """The subgraph at ``namespace`` (``parent|child`` for a nested one, which needs
    ``recurse``); ``{}`` when there is none there."""
    return await _subgraphs_of(request, assistant_id, namespace, recurse)


async def _subgraphs_of(
    request: Request, assistant_id: AssistantId, namespace: str | None, recurse: bool
) -> dict[str, Any]:
    async with assistant_graph(request, assistant_id) as (graph_id, graph):
        return subgraph_schemas(graph_id, graph, namespace, recurse)


@contextlib.asynccontextmanager
async def assistant_graph(
    request: Request, assistant_id: str
) -> AsyncIterator[tuple[str, Pregel[Any, Any, Any, Any]]]:
    """The assistant's graph id and graph, opened to be looked at (``assistants.read``:
    a factory gets the assistant's config; ``AssistantService.graph``)."""
    async with ctx_of(request).assistants.graph(assistant_id) as opened:
        yield opened
