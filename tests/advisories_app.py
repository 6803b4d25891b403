"""An app's ``auth.py`` for the advisories' tests (``tests/test_advisories.py``): one
user, ann, works at two desks, a token each, and sees only what her desk made; ben is
another user; ann's ``blind`` token may read no assistant at all.

Threads (``@auth.on.threads``, every action) are stamped with their owner and desk and
filtered by both, so ann's two tokens are one principal that the filter keeps apart.
Assistants are stamped alike; ``assistants.search`` lists every one of them while
``assistants.read`` keeps to the desk's (or says False): the split that
GHSA-jfj5-wrj9-63x4 was about, where a run was admitted through ``search``."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

USERS: dict[str, dict[str, Any]] = {
    "ann-desk1": {"identity": "ann", "desk": "1", "permissions": []},
    "ann-desk2": {"identity": "ann", "desk": "2", "permissions": []},
    "ann-blind": {"identity": "ann", "desk": "1", "permissions": ["blind"]},
    "ben": {"identity": "ben", "desk": "1", "permissions": []},
}

auth = Auth()


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or token not in USERS:
        raise Auth.exceptions.HTTPException(status_code=401, detail="invalid or missing token")
    return USERS[token]  # type: ignore[return-value]


def _desk(ctx: Auth.types.AuthContext) -> dict[str, Any]:
    return {"owner": ctx.user.identity, "desk": ctx.user["desk"]}


def _stamp(ctx: Auth.types.AuthContext, value: Any) -> None:
    metadata = value.setdefault("metadata", {})
    if isinstance(metadata, dict):
        metadata.update(_desk(ctx))


@auth.on.threads
async def threads_of_the_desk(ctx: Auth.types.AuthContext, value: Any) -> Auth.types.FilterType:
    _stamp(ctx, value)
    return _desk(ctx)


@auth.on.assistants.create
async def assistants_stamped(ctx: Auth.types.AuthContext, value: Any) -> None:
    _stamp(ctx, value)


@auth.on.assistants.search
async def every_assistant_listed(ctx: Auth.types.AuthContext, value: Any) -> None:
    return None


@auth.on.assistants.read
async def assistants_of_the_desk(
    ctx: Auth.types.AuthContext, value: Any
) -> Auth.types.FilterType | bool:
    if "blind" in ctx.permissions:
        return False
    return _desk(ctx)
