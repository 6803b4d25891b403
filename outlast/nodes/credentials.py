"""Credentials by reference: a tool asks for one by name when it runs, never from the state.

A token written into the graph's state would be in every checkpoint from then on, and
would be the one that expired while the run waited three days for an approval. So a tool
asks at the moment it needs it::

    token = (await credential("github")).value

Under outlast the run's resolver answers (``runtime/credentials.py``): what a person gave
this run through an ``auth`` wait, then the configured providers (``outlast/credentials.py``:
the environment, a file of secrets, a callable that refreshes an OAuth token). What the
checkpoint and the event log hold is the name, never the value.

A credential that is missing or expired raises ``CredentialMissing`` / ``CredentialExpired``
(a ``CredentialNeeded``); so may the tool itself, when the remote side rejects the value
(a 401). Under outlast either one parks the run on an ``auth`` wait that names the
credential and why; the answer goes to the run's resolver, sealed, and the node runs
again from its last checkpoint with the new value. Outside outlast (a notebook, plain
LangGraph) ``credential`` reads ``OUTLAST_CREDENTIAL_<NAME>`` from the environment and the
exceptions simply propagate.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from langgraph.config import get_config

from outlast.config import credential_from_env, credential_variable

CREDENTIALS_KEY = "__outlast_credentials"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,99}$")


@dataclass(frozen=True, slots=True)
class Credential:
    """A secret and where it came from. Its ``repr`` never shows the value, so a log line
    or a traceback that prints it leaks nothing."""

    name: str
    value: Any = field(repr=False)
    expires_at: dt.datetime | None = None
    source: str = ""

    def expired(self, now: dt.datetime | None = None, *, margin: float = 0.0) -> bool:
        if self.expires_at is None:
            return False
        now = now or dt.datetime.now(dt.UTC)
        return self.expires_at - dt.timedelta(seconds=margin) <= now


class CredentialNeeded(Exception):
    """The operation cannot go on without credential ``name``; a person can supply it."""

    retryable = True  # once the credential is supplied

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"credential {name!r}: {reason}")
        self.name = name
        self.reason = reason


class CredentialMissing(CredentialNeeded):
    """No provider has it (or the one that had it refused)."""


class CredentialExpired(CredentialNeeded):
    """It expired, or the remote side rejected it; raise it from a tool on a 401."""

    def __init__(self, name: str, reason: str = "expired or rejected") -> None:
        super().__init__(name, reason)


class Resolver(Protocol):
    async def resolve(self, name: str) -> Credential: ...

    def resolve_sync(self, name: str) -> Credential: ...

    def answered(self, reference: Any) -> Any: ...


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(
            f"a credential name is 1-100 letters, digits, '_', '.', ':' or '-': {name!r}"
        )
    return name


def _resolver() -> Resolver | None:
    try:
        config = get_config()
    except RuntimeError:
        return None
    found: Resolver | None = (config.get("configurable") or {}).get(CREDENTIALS_KEY)
    return found


async def credential(name: str) -> Credential:
    """The credential ``name``, resolved now. Raises ``CredentialNeeded`` when there is
    none (under outlast: the run then waits for a person to give it)."""
    check_name(name)
    resolver = _resolver()
    if resolver is not None:
        return await resolver.resolve(name)
    return _from_env(name)


def credential_sync(name: str) -> Credential:
    """``credential`` for a sync tool or node, which LangGraph runs on a worker thread:
    the resolution runs on the run's event loop, and this thread waits for it."""
    check_name(name)
    resolver = _resolver()
    if resolver is not None:
        return resolver.resolve_sync(name)
    return _from_env(name)


def _from_env(name: str) -> Credential:
    value = credential_from_env(name)
    if not value:
        raise CredentialMissing(name, f"not set ({credential_variable(name)})")
    return Credential(name, value, source="env")


def answered(value: Any) -> Any:
    """What a resumed ``auth`` interrupt returned: under outlast a reference to the sealed
    answer, opened here (it never is in the checkpoint); otherwise the value itself."""
    resolver = _resolver()
    if resolver is not None:
        return resolver.answered(value)
    return value
