"""An app's ``auth.py`` as LangGraph's custom-auth guide shapes one (written for these
tests): bearer tokens for a few users, ``authenticate`` → identity, every resource stamped
with its owner and filtered by it; carol's two tokens each see one project's threads (a
``$contains`` filter); deleting a thread takes a permission; a read-only user starts no
run; the store is scoped to the user's namespace."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

USERS: dict[str, dict[str, Any]] = {
    "token-alice": {"identity": "alice", "display_name": "Alice", "permissions": ["delete"]},
    "token-bob": {"identity": "bob", "display_name": "Bob", "permissions": []},
    "token-carol-p1": {"identity": "carol", "project": "p1", "permissions": []},
    "token-carol-p2": {"identity": "carol", "project": "p2", "permissions": []},
    "token-rita": {"identity": "rita", "permissions": ["readonly"]},
}

auth = Auth()


@auth.authenticate
async def authenticate(
    authorization: str | None, method: str, path: str
) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if token == "token-suspended":
        raise Auth.exceptions.HTTPException(status_code=403, detail="this account is suspended")
    if scheme.lower() != "bearer" or token not in USERS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="invalid or missing token")
    return USERS[token]  # type: ignore[return-value]


def _owned(ctx: Auth.types.AuthContext) -> dict[str, Any]:
    wanted: dict[str, Any] = {"owner": ctx.user.identity}
    if "project" in ctx.user:
        wanted["projects"] = {"$contains": ctx.user["project"]}
    return wanted


@auth.on
async def owner_only(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    """Stamp what is made with its owner (and project); see only what is yours."""
    metadata = value.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata["owner"] = ctx.user.identity
        if "project" in ctx.user:
            metadata["projects"] = [ctx.user["project"]]
    return _owned(ctx)  # type: ignore[return-value]


@auth.on.threads.create_run
async def runs_need_write(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    if "readonly" in ctx.permissions:
        raise Auth.exceptions.HTTPException(status_code=403, detail="read-only users run nothing")
    resume = ((value.get("kwargs") or {}).get("command") or {}).get("resume")
    if "vetoed" in str(resume):  # a resume is a run: the handler sees what it answers
        raise Auth.exceptions.HTTPException(status_code=403, detail="that answer is vetoed")
    return await owner_only(ctx, value)


@auth.on.threads.delete
async def delete_needs_permission(
    ctx: Auth.types.AuthContext, value: Auth.types.on.threads.delete.value
) -> Auth.types.FilterType | bool:
    if "delete" not in ctx.permissions:
        return False
    return _owned(ctx)  # type: ignore[return-value]


@auth.on.store
async def own_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != ctx.user.identity:
        value["namespace"] = (ctx.user.identity, *namespace)


# The isolation matrix's auth.py (tests/test_isolation_matrix.py): the same users, with
# ownership the only rule. No permission lets one user do what another cannot, so
# whatever bob is refused on alice's things, it is ownership that refused it.
owners = Auth()
owners.authenticate(authenticate)


@owners.on
async def stamped_and_owned(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    metadata = value.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata["owner"] = ctx.user.identity
    return {"owner": ctx.user.identity}


@owners.on.store
async def own_namespace_only(ctx: Auth.types.AuthContext, value: Any) -> None:
    """A namespace is its first label's user's; a search or listing without one is the
    caller's own."""
    namespace = tuple(value.get("namespace") or ())
    if not namespace:
        value["namespace"] = (ctx.user.identity,)
    elif namespace[0] != ctx.user.identity:
        raise Auth.exceptions.HTTPException(status_code=403, detail="not your namespace")
