"""One run's credentials: what its tools get from ``outlast.nodes.credential(name)``.

The run's own answers come first: the latest ``auth`` wait for a name, answered, holds
the value a person gave, sealed (``secretbox``); a later wait for the same name (the
value was rejected) supersedes it. Then the configured providers (``outlast/credentials``).
Nothing here writes a value anywhere: it is opened in memory when a tool asks.

When no one has the credential, or it expired, or a tool raised ``CredentialExpired``
(the remote side said 401), the run parks on an ``auth`` wait of the runtime's own (not a
LangGraph interrupt, so the answer never enters a checkpoint): it names the credential
and why. The answer is sealed when it is stored; on resume the wait is consumed and the
node runs again from the run's last checkpoint, and this time finds the answer.

``require_auth(scope)`` waits through a LangGraph interrupt instead (it is a wait a node
asks for on purpose): its answer is stored sealed the same way, and the graph is resumed
with a reference to it (``{"outlast_credential": wait_id}``), which ``answered`` opens.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

from outlast.credentials import CredentialProvider, ask
from outlast.nodes.credentials import (
    Credential,
    CredentialExpired,
    CredentialMissing,
    CredentialNeeded,
)
from outlast.secretbox import SecretBox, SecretUnreadable
from outlast.store import Run, Wait, WaitSpec, WaitStore
from outlast.vocabulary import WaitKind, is_sealed

# Interrupt ids of the runtime's credential waits (``runtime/policy.py`` consumes them).
CREDENTIAL_WAIT = "credential:"
REFERENCE = "outlast_credential"

ANSWER_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "properties": {
                "value": {"type": ["string", "object"], "minLength": 1, "minProperties": 1},
                "expires_at": {"type": "string", "format": "date-time"},
            },
            "required": ["value"],
            "additionalProperties": False,
        },
    ]
}


def name_of(wait: Wait) -> str | None:
    scope = (wait.object or {}).get("credential") or (wait.object or {}).get("scope")
    return str(scope) if scope else None


def as_credential(name: str, value: Any, source: str) -> Credential:
    """An answer as a credential: a string, or ``{"value", "expires_at"?}``; anything
    else (``require_auth`` takes any JSON) is the value as given."""
    if isinstance(value, dict) and "value" in value and set(value) <= {"value", "expires_at"}:
        expires = value.get("expires_at")
        when = dt.datetime.fromisoformat(str(expires)) if expires else None
        if when is not None and when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return Credential(name, value["value"], when, source)
    return Credential(name, value, None, source)


class RunCredentials:
    """The resolver a run's config carries (``nodes.credentials.CREDENTIALS_KEY``)."""

    def __init__(
        self, box: SecretBox, chain: Sequence[CredentialProvider], waits: Sequence[Wait]
    ) -> None:
        self._box = box
        self._chain = chain
        self._loop = asyncio.get_running_loop()  # where a sync tool's resolution runs
        self._by_id = {w.id: w for w in waits if w.kind == WaitKind.AUTH}
        self._latest: dict[str, Wait] = {}
        for wait in sorted(self._by_id.values(), key=lambda w: w.since):
            name = name_of(wait)
            if name is not None:
                self._latest[name] = wait

    @classmethod
    async def load(
        cls, store: WaitStore, run: Run, box: SecretBox, chain: Sequence[CredentialProvider]
    ) -> RunCredentials:
        # A first attempt has no waits yet: no query on the path every run takes.
        return cls(box, chain, await store.list_waits(run.id) if run.has_history else [])

    def _open(self, wait: Wait, name: str) -> Any:
        try:
            return self._box.open_answer(wait.answer)
        except SecretUnreadable:
            raise CredentialMissing(
                name,
                "the answer given earlier can no longer be read: the secret keys changed "
                "(put the old key back in OUTLAST_SECRET_KEYS, after the new one), or answer "
                "again",
            ) from None

    async def resolve(self, name: str) -> Credential:
        expired: Credential | None = None
        latest = self._latest.get(name)
        if latest is not None and is_sealed(latest.answer):
            given = as_credential(name, self._open(latest, name), "answer")
            if not given.expired():
                return given
            expired = given
        found = await ask(self._chain, name)
        if found is not None and not found.expired():
            return found
        expired = found or expired
        if expired is not None:
            raise CredentialExpired(name, f"expired at {expired.expires_at:%Y-%m-%d %H:%M:%S}Z")
        raise CredentialMissing(name, "no provider has it")

    def resolve_sync(self, name: str) -> Credential:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:  # waiting here would stop the loop that must answer
            raise RuntimeError(
                "credential_sync is for sync tools; in async code, await credential()"
            )
        return asyncio.run_coroutine_threadsafe(self.resolve(name), self._loop).result()

    def answered(self, value: Any) -> Any:
        """What ``require_auth`` returns: the sealed answer a reference points to."""
        if isinstance(value, dict) and set(value) == {REFERENCE}:
            wait = self._by_id.get(str(value[REFERENCE]))
            if wait is None or not is_sealed(wait.answer):
                raise CredentialMissing(str(value[REFERENCE]), "the answer is gone")
            return self._open(wait, name_of(wait) or "?")
        return value


def reference(wait: Wait) -> Any:
    """What a resumed ``auth`` interrupt is given in place of its answer."""
    return {REFERENCE: wait.id} if is_sealed(wait.answer) else wait.answer


def needed_in(exc: BaseException) -> CredentialNeeded | None:
    """The ``CredentialNeeded`` behind an exception the graph raised, however wrapped."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, CredentialNeeded):
            return item
        if isinstance(item, BaseExceptionGroup):
            todo.extend(item.exceptions)
        todo.extend(e for e in (item.__cause__, item.__context__) if e is not None)
    return None


def wait_for(needed: CredentialNeeded) -> WaitSpec:
    return WaitSpec(
        interrupt_id=f"{CREDENTIAL_WAIT}{needed.name}:{uuid.uuid4().hex[:8]}",
        kind=WaitKind.AUTH,
        object={"credential": needed.name, "reason": needed.reason},
        prompt=(
            f"The run needs the credential {needed.name!r} ({needed.reason}). Answer with "
            'the secret: a string, or {"value": ..., "expires_at": "<ISO 8601>"}.'
        ),
        schema=ANSWER_SCHEMA,
    )
