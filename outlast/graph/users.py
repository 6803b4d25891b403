"""The user a LangGraph app's ``auth.py`` authenticated, as LangGraph's handlers, graph
factories (``ServerRuntime.user``) and runs (``config["configurable"]``) see it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any


class User:
    """The authenticated user as LangGraph's handlers see it (``BaseUser``): ``identity``,
    ``display_name``, ``is_authenticated``, ``permissions``, and whatever else the
    authenticate handler returned, by key (``user["org"]``) or as an attribute."""

    __slots__ = ("_fields",)

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self._fields = dict(fields)

    @property
    def identity(self) -> str:
        return str(self._fields["identity"])

    @property
    def display_name(self) -> str:
        return str(self._fields.get("display_name") or self.identity)

    @property
    def is_authenticated(self) -> bool:
        return bool(self._fields.get("is_authenticated", True))

    @property
    def permissions(self) -> list[str]:
        return list(self._fields.get("permissions") or [])

    def fields(self) -> dict[str, Any]:
        """Everything the user carries, as JSON-ready as the handler made it."""
        return {
            **self._fields,
            "identity": self.identity,
            "display_name": self.display_name,
            "is_authenticated": self.is_authenticated,
            "permissions": self.permissions,
        }

    def __getattr__(self, name: str) -> Any:
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key: str) -> Any:
        return self.fields()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.fields()

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields())

    def __repr__(self) -> str:
        return f"User({self.identity!r})"


def user_of(found: Any) -> User:
    """What an authenticate handler returned (a str, a ``MinimalUserDict``, any object
    with ``identity``) as a ``User``; anything else is the handler's bug (a 500)."""
    if isinstance(found, str) and found:
        return User({"identity": found})
    if isinstance(found, Mapping) and found.get("identity"):
        return User(found)
    identity = getattr(found, "identity", None)
    if isinstance(identity, str) and identity:
        fields: dict[str, Any] = {"identity": identity}
        for name in ("display_name", "is_authenticated", "permissions"):
            if hasattr(found, name):
                fields[name] = getattr(found, name)
        return User(fields)
    raise TypeError(f"the authenticate handler returned {type(found).__name__}, not a user")


# Fields an authenticate handler may return beside the user that are credentials (the
# caller's token, a key for a downstream API): a run's config is stored with the run and
# its checkpoints, and no secret is stored in the clear, so these stay out of it.
_CREDENTIAL = re.compile(
    r"(?i)(token|secret|password|passwd|api[_-]?key|authorization|credential|cookie|session)"
)


def configurable_of(user: User) -> dict[str, Any]:
    """The keys LangGraph's server puts in a run's ``config["configurable"]``, the
    user's credential-like fields left out (``_CREDENTIAL``)."""
    kept = {k: v for k, v in user.fields().items() if not _CREDENTIAL.search(k)}
    return {
        "langgraph_auth_user": kept,
        "langgraph_auth_user_id": user.identity,
        "langgraph_auth_permissions": user.permissions,
    }


def user_in(config: Mapping[str, Any]) -> User | None:
    """The user a run was accepted for, from its config (None: no app auth)."""
    found = (config.get("configurable") or {}).get("langgraph_auth_user")
    return User(found) if isinstance(found, Mapping) and found.get("identity") else None
