"""An app's ``auth.py`` in the two shapes LangGraph's tutorials teach for sharing (written
for these tests): threads shared within an organisation (stamped with the creator's
``org`` on create, filtered by the caller's ``org``), and a store where each user keeps
to their own namespace (``assert namespace[0] == identity``) while an admin reads every
user's."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

USERS: dict[str, dict[str, Any]] = {
    "token-ada": {"identity": "ada", "org": "acme", "permissions": []},
    "token-ben": {"identity": "ben", "org": "acme", "permissions": []},
    "token-eve": {"identity": "eve", "org": "other", "permissions": []},
    "token-root": {"identity": "root", "org": "ops", "permissions": ["admin"]},
}

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    _, _, token = (authorization or "").partition(" ")
    if token not in USERS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="invalid or missing token")
    return USERS[token]  # type: ignore[return-value]


@auth.on.threads.create
async def stamp_org(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    value.setdefault("metadata", {})["org"] = ctx.user["org"]
    return {"org": ctx.user["org"]}


@auth.on.threads
async def same_org(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    return {"org": ctx.user["org"]}


@auth.on.assistants
async def assistants_open(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


@auth.on.crons
async def crons_by_org(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    metadata = value.get("metadata")
    if isinstance(metadata, dict):
        metadata["org"] = ctx.user["org"]
    return {"org": ctx.user["org"]}


@auth.on.store()
async def own_namespace_or_admin(ctx: Auth.types.AuthContext, value: Any) -> None:
    if "admin" in ctx.permissions:
        return
    namespace = tuple(value.get("namespace") or ())
    assert namespace and namespace[0] == ctx.user.identity, "Not authorized"
