"""The differential app's ``auth.py``, shaped as LangGraph's auth tutorial teaches: bearer
tokens checked with ``assert`` and ``split()`` as the tutorial writes them, a global
``@auth.on`` handler that stamps the owner into the metadata and filters by it, handlers
scoped to a resource (threads, assistants, crons) or to one action, and a store handler
that keeps each user in their own namespace, with an admin who may go anywhere.

The admin's requests pass every handler unfiltered: the differential scenarios that are
not about authorization run as the admin.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

VALID_TOKENS: dict[str, dict[str, Any]] = {
    "user1-token": {"id": "user1", "name": "Alice", "permissions": []},
    "user2-token": {"id": "user2", "name": "Bob", "permissions": []},
    "admin-token": {"id": "admin", "name": "Root", "permissions": ["admin"]},
}

auth = Auth()


def _is_admin(ctx: Auth.types.AuthContext) -> bool:
    return "admin" in ctx.permissions


@auth.authenticate
async def get_current_user(authorization: str | None) -> Auth.types.MinimalUserDict:
    """Check that the request carries a valid bearer token (the tutorial's checks)."""
    assert authorization
    scheme, token = authorization.split()
    assert scheme.lower() == "bearer"
    if token == "suspended-token":
        raise Auth.exceptions.HTTPException(status_code=403, detail="This account is suspended")
    if token not in VALID_TOKENS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="Invalid token")
    user = VALID_TOKENS[token]
    return {
        "identity": user["id"],
        "display_name": user["name"],
        "permissions": user["permissions"],
        "is_authenticated": True,
    }


@auth.on
async def add_owner(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
    """Make resources private to their creator: stamp the owner, filter by it."""
    if _is_admin(ctx):
        return None
    filters = {"owner": ctx.user.identity}
    metadata = value.setdefault("metadata", {})
    metadata.update(filters)
    return filters


@auth.on.threads.create
async def on_thread_create(
    ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create.value
) -> Any:
    """A thread is its creator's; the admin's are too, under its own name."""
    metadata = value.setdefault("metadata", {})
    metadata["owner"] = ctx.user.identity
    return None if _is_admin(ctx) else {"owner": ctx.user.identity}


@auth.on.threads.read
async def on_thread_read(
    ctx: Auth.types.AuthContext, value: Auth.types.on.threads.read.value
) -> Any:
    """Only your own threads (the admin reads them all)."""
    return None if _is_admin(ctx) else {"owner": ctx.user.identity}


@auth.on.threads.delete
async def on_thread_delete(
    ctx: Auth.types.AuthContext, value: Auth.types.on.threads.delete.value
) -> Any:
    """Deleting needs the thread to be yours, and a user may never delete a thread whose
    metadata says it is kept."""
    return None if _is_admin(ctx) else {"owner": ctx.user.identity}


@auth.on.threads.create_run
async def on_run_create(
    ctx: Auth.types.AuthContext, value: Auth.types.on.threads.create_run.value
) -> Any:
    """A run needs a thread of yours; an answer the reviewer may not give is refused."""
    command = (value.get("kwargs") or {}).get("command") or {}
    if command.get("resume") == "forbidden answer":
        raise Auth.exceptions.HTTPException(status_code=403, detail="That answer is not allowed")
    return None if _is_admin(ctx) else {"owner": ctx.user.identity}


@auth.on.assistants.delete
async def on_assistant_delete(
    ctx: Auth.types.AuthContext, value: Auth.types.on.assistants.delete.value
) -> Any:
    """Only an admin deletes an assistant."""
    if not _is_admin(ctx):
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="User lacks the required permissions."
        )
    return None


@auth.on.crons
async def on_crons(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
    """Schedules are the admin's business."""
    return _is_admin(ctx)


@auth.on.store()
async def authorize_store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Each user's items live under their own id; the admin may read and write anywhere."""
    if _is_admin(ctx):
        return
    namespace: tuple[str, ...] = tuple(value["namespace"])
    assert namespace and namespace[0] == ctx.user.identity, "Not authorized"
