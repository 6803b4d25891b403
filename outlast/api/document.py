"""The OpenAPI document, as the server answers: every error of ``/v1`` (and of the health
routes) is ``application/problem+json``, and every status a route can answer is listed.

Routes declare the statuses they raise themselves (``problems.declared``); what is added
here is what every operation can meet on its way in, outside the route: authentication
(with API keys), the rate limit, validation, a body that is not JSON or is too large, the
database being away, an internal error. The LangGraph face (at the root) keeps the
document FastAPI makes for it: it answers its clients' ``{"detail"}`` errors.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from outlast.api.problems import PROBLEM
from outlast.api.schemas import STORABLE_JSON, STORABLE_OBJECT, Problem

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
NATIVE = ("/v1/", "/healthz", "/readyz", "/metrics")
PUBLIC = ("/healthz", "/readyz")  # no key, no rate limit (auth.PUBLIC)
METHODS_WITH_BODY = {"post", "put", "patch"}
DESCRIPTIONS = {
    400: "malformed request: a body that is not JSON, a bad header or cursor",
    401: "an API key is required, or the key is unknown",
    404: "no such resource (or another principal's)",
    409: "conflict with the resource's current state",
    413: "the body or a part of it is larger than its limit",
    422: "the request is not one this server can take",
    429: "a per-principal limit (Retry-After says when to come back)",
    500: "internal error",
    503: "the database is unavailable; retry (Retry-After)",
}


def declared(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's own error statuses, for its ``responses=``; ``install`` makes each a
    problem document."""
    return {status: {"description": DESCRIPTIONS.get(status, "error")} for status in statuses}


def _statuses(method: str, operation: dict[str, Any], app: Any) -> set[int]:
    found = {500, 503}
    if getattr(app, "keys", None) is not None and app.keys.enabled:
        found.add(401)
    limiter = getattr(app, "limiter", None)
    if limiter is not None and limiter.rate > 0:
        found.add(429)
    if operation.get("parameters") or "requestBody" in operation:
        found.add(422)
    if method in METHODS_WITH_BODY:
        found |= {400, 413}
    return found


def _not_null(operation: dict[str, Any]) -> None:
    """A query parameter or header is a string or absent, never JSON ``null``: FastAPI
    says ``anyOf [X, null]`` for an optional one, which clients and fuzzers read as
    "send the text null"."""
    for param in operation.get("parameters", []):
        schema = param.get("schema", {})
        branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
        if len(branches) == 1 and len(schema["anyOf"]) == 2:
            del schema["anyOf"]
            param["schema"] = {**branches[0], **schema}


def _problems(path: str, method: str, operation: dict[str, Any], app: FastAPI) -> None:
    _not_null(operation)
    responses: dict[str, Any] = operation.setdefault("responses", {})
    statuses = {int(code) for code in responses if code.isdigit()}
    statuses |= {500} if path in PUBLIC else _statuses(method, operation, app)
    for status in sorted(statuses):
        if status < 400:
            continue
        entry = responses.setdefault(str(status), {})
        entry.setdefault("description", DESCRIPTIONS.get(status, "error"))
        entry["content"] = {PROBLEM: {"schema": PROBLEM_REF}}


def _graphs(schemas: dict[str, Any], app: FastAPI) -> None:
    """The graphs this server runs, as the only values ``graph`` takes (another name is a
    422). Known once the app started; a document made before says only "a string"."""
    ctx = getattr(app.state, "ctx", None)
    if ctx is None:
        return
    for name in ("outlast__api__schemas__RunCreate", "RunCreate", "ThreadRunCreate"):
        graph = schemas.get(name, {}).get("properties", {}).get("graph", {})
        for branch in graph.get("anyOf", []):
            if branch.get("type") == "string":
                branch["enum"] = ["", *ctx.registry.names]  # "": the first one


def install(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        for path, operations in document.get("paths", {}).items():
            if not path.startswith(NATIVE):
                continue
            for method, operation in operations.items():
                _problems(path, method, operation, app)
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        _graphs(schemas, app)
        schemas["Problem"] = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schemas["Problem"].pop("$defs", {}))
        schemas["StorableJSON"] = STORABLE_JSON
        schemas["StorableObject"] = STORABLE_OBJECT
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]
