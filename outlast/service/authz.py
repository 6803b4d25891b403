"""A LangGraph app's own ``auth.py``: its ``Auth()`` object, behind every face.

``langgraph.json``'s ``auth.path`` names a ``langgraph_sdk.auth.Auth``. Its
``@auth.authenticate`` handler says who calls (``api/userauth.py`` runs it on every
request, in place of outlast's API keys); the identity it returns is the caller's
principal, and owns what the caller makes, but who else may touch it is the handlers'
decision, as on LangGraph's server (``shared``; ``service/owners.py``). Its ``@auth.on``
handlers are asked here, once per operation, by every
face that touches the resource (the LangGraph face, the thread protocol, ``/v1``, A2A,
MCP; assistants in ``service/assistants.py``, crons in ``service/crons.py``):
``None``/``True`` allows, ``False`` refuses (``403``, as a failed ``assert`` does, with its
message; a ``ValueError`` is a ``400``, as on LangGraph's server), a dict is a filter on
the resource's metadata (a thread that fails it does not exist for the caller: ``404`` on
a read, absent from a search), and what the handler writes into ``value["metadata"]`` is
what gets stored (on an assistants or crons search, what it is searched by). The most
specific handler answers, as on LangGraph's server: the resource's action, the resource,
the action on any resource, then the global one.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph_sdk.auth import Auth
from langgraph_sdk.auth.exceptions import HTTPException
from langgraph_sdk.auth.types import AuthContext

from outlast.errors import GraphLoadError, OutlastError
from outlast.graph.users import User, configurable_of, user_in, user_of

Filter = dict[str, Any]


class Forbidden(OutlastError):
    status = 403
    title = "Forbidden"


class HandlerValueError(OutlastError):
    """A ``ValueError`` raised by an ``@auth.on`` handler: a ``400`` with its message, as
    LangGraph's server answers it."""

    status = 400
    title = "Refused by the app's auth handler"


class AuthRefused(OutlastError):
    """An ``Auth.exceptions.HTTPException`` raised by a handler: its status and detail."""

    title = "Refused by the app's auth handler"


_REFUSALS: dict[int, type[AuthRefused]] = {}


def refused(exc: HTTPException) -> AuthRefused:
    """The handler's ``HTTPException`` as an error every face shapes (its status is a
    class attribute, as every ``OutlastError``'s: one subclass per status)."""
    cls = _REFUSALS.get(exc.status_code)
    if cls is None:
        cls = type(f"AuthRefused{exc.status_code}", (AuthRefused,), {"status": exc.status_code})
        _REFUSALS[exc.status_code] = cls
    return cls(str(exc.detail))


def load(target: str, base: Any) -> Auth:
    """The ``Auth`` that ``auth.path`` names, or a ``ManifestError`` naming the key."""
    from outlast.graph.manifest import ManifestError
    from outlast.importing import resolve_in

    try:
        found = resolve_in(target, base)
    except (ImportError, GraphLoadError, OSError, SyntaxError) as exc:
        raise ManifestError(f"auth.path: {target!r} does not import: {exc}") from exc
    except Exception as exc:  # a module that raises as it is imported names nothing
        raise ManifestError(f"auth.path: {target!r}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(found, Auth):
        raise ManifestError(
            f"auth.path: {target!r} is a {type(found).__name__}, not a langgraph_sdk Auth()"
        )
    return found


def matches(metadata: Mapping[str, Any], wanted: Filter | None) -> bool:
    """A handler's filter against a resource's metadata: ``{"k": v}`` and ``{"k":
    {"$eq": v}}`` equality, ``{"k": {"$contains": v}}`` membership of ``v`` (or of every
    element of a list ``v``) in the list ``metadata[k]``; keys are ANDed."""
    for key, want in (wanted or {}).items():
        have = metadata.get(key)
        if isinstance(want, Mapping) and ("$eq" in want or "$contains" in want):
            if "$eq" in want and have != want["$eq"]:
                return False
            if "$contains" in want and not _contains(have, want["$contains"]):
                return False
        elif have != want:
            return False
    return True


def _contains(have: Any, want: Any) -> bool:
    if not isinstance(have, Sequence) or isinstance(have, str):
        return False
    wanted = want if isinstance(want, list) else [want]
    return all(w in have for w in wanted)


def handler_for(auth: Auth, resource: str, action: str) -> Any:
    """The most specific handler, as LangGraph's server picks it (None: no handler covers
    the action: allowed, or refused under ``OUTLAST_AUTH_DEFAULT=deny``)."""
    for key in ((resource, action), (resource, "*"), ("*", action)):
        if key in auth._handlers:
            return auth._handlers[key][-1]
    return auth._global_handlers[-1] if auth._global_handlers else None


@dataclass(frozen=True, slots=True)
class Authz:
    """The app's handlers, asked for one caller (``user``); without an ``auth.py``
    (``auth`` None) everything is allowed and nothing is filtered."""

    auth: Auth | None = None
    user: User | None = None
    # The app has an auth.py: its handlers, not the principal, decide who shares a thread,
    # a run, an item (service/owners.py). Also for a cron's tick, which asks no handler.
    shared: bool = False
    # OUTLAST_AUTH_DEFAULT=deny: what no handler covers is refused, not allowed as on
    # LangGraph's server.
    deny_uncovered: bool = False
    # per request: what was asked already → its filter and the value as the handler left
    # it (a route and the lookups it makes ask the handler once)
    _asked: dict[tuple[str, str, str], tuple[Filter | None, dict[str, Any]]] = field(
        default_factory=dict, compare=False
    )

    @property
    def active(self) -> bool:
        return self.auth is not None and self.user is not None

    async def check(self, resource: str, action: str, value: dict[str, Any]) -> Filter | None:
        """Ask the handler for ``resource``/``action`` about ``value`` (which it may
        change in place): its filter, or None; ``Forbidden`` on ``False``, and
        ``Uncovered`` (a ``Forbidden``) for an action no handler covers under deny."""
        if self.auth is None or self.user is None:
            return None
        handler = handler_for(self.auth, resource, action)
        if handler is None:
            if self.deny_uncovered:
                raise Uncovered(f"{resource}.{action}: {DENIED}")
            return None
        ctx = AuthContext(
            permissions=self.user.permissions,
            user=self.user,  # a BaseUser by its members
            resource=resource,  # type: ignore[arg-type]
            action=action,  # type: ignore[arg-type]
        )
        try:
            result = handler(ctx=ctx, value=value)
            if inspect.isawaitable(result):
                result = await result
        except HTTPException as exc:
            raise refused(exc) from None
        except AssertionError as exc:
            # LangGraph's server answers a failed assertion in a handler with 403 and its
            # message; its tutorials write rules that way (`assert ns[0] == identity, …`)
            raise Forbidden(str(exc) or f"{resource}.{action} is not allowed") from None
        except ValueError as exc:  # LangGraph's server: 400 with the message
            raise HandlerValueError(str(exc) or f"{resource}.{action}: {exc!r}") from None
        if result is False:
            raise Forbidden(f"{resource}.{action} is not allowed for {self.user.identity}")
        return dict(result) if isinstance(result, Mapping) and result else None

    async def filter(self, resource: str, action: str, value: dict[str, Any]) -> Filter | None:
        """``check``, asked once per request for the same value; asked again, ``value``
        becomes what the handler made of it the first time (a search's metadata)."""
        if not self.active:
            return None
        key = (resource, action, repr(sorted(value.items(), key=lambda kv: kv[0])))
        if key in self._asked:
            wanted, after = self._asked[key]
            value.clear()
            value.update(copy.deepcopy(after))
            return wanted
        wanted = await self.check(resource, action, value)
        self._asked[key] = (wanted, copy.deepcopy(value))
        return wanted

    async def admits(
        self, resource: str, action: str, value: dict[str, Any], metadata: Mapping[str, Any]
    ) -> bool:
        """Whether the resource with ``metadata`` passes the handler's filter."""
        return matches(metadata, await self.filter(resource, action, value))


NOBODY = Authz()
__all__ = ["NOBODY", "Authz", "User", "configurable_of", "matches", "user_in", "user_of"]


# -- coverage: what no handler answers -------------------------------------------------

DENIED = "no @auth.on handler covers it, and OUTLAST_AUTH_DEFAULT=deny refuses what none covers"


class Uncovered(Forbidden):
    """An action no handler covers, refused under ``OUTLAST_AUTH_DEFAULT=deny``. Deny is
    about what a client does: code that asks a handler for its own purposes (a lookup the
    client's action does not depend on) catches it."""


# Every (resource, action) langgraph_sdk's ``Auth.on`` registers a handler for: what
# LangGraph's server checks an Auth's coverage against at start, so both name the same
# gaps (tests/test_auth_coverage.py holds this to the SDK's own namespaces).
ACTIONS: tuple[tuple[str, str], ...] = tuple(
    (resource, action)
    for resource, actions in (
        ("assistants", ("create", "read", "update", "delete", "search")),
        ("threads", ("create", "read", "update", "delete", "search", "create_run")),
        ("crons", ("create", "read", "update", "delete", "search")),
        ("store", ("put", "get", "search", "list_namespaces", "delete")),
    )
    for action in actions
)


def uncovered(auth: Auth) -> list[tuple[str, str]]:
    """The (resource, action) pairs no handler of ``auth`` answers, by ``handler_for``'s
    precedence (the pair's, the resource's, the action's on any resource, the global
    one), sorted."""
    return sorted(pair for pair in ACTIONS if handler_for(auth, *pair) is None)


def coverage_warning(auth: Auth, deny: bool) -> str | None:
    """What the server logs at start about ``auth`` (None: every action is covered).
    Unlike LangGraph's server, an Auth with no ``@auth.on`` handler at all is reported
    too: under an ``auth.py`` the handlers, not the identity, decide who sees a thread."""
    missing = uncovered(auth)
    if not missing:
        return None
    names = ", ".join(f"{resource}.{action}" for resource, action in missing)
    said = (
        f"the app's auth.py has no @auth.on handler for {len(missing)} of {len(ACTIONS)} "
        f"actions: {names}. "
    )
    if deny:
        return said + "OUTLAST_AUTH_DEFAULT=deny refuses them (403)."
    return said + (
        "They are allowed for every authenticated caller, unfiltered, as on LangGraph's "
        "server: a global @auth.on handler covers them all, OUTLAST_AUTH_DEFAULT=deny "
        "refuses them."
    )
