"""Credential providers: where a credential named by a tool comes from.

``OUTLAST_CREDENTIAL_PROVIDERS`` lists them in the order they are asked (the first that
has the name answers); a run's own answers to ``auth`` waits come before all of them
(``runtime/credentials.py``). Built in:

- ``env``: ``OUTLAST_CREDENTIAL_<NAME>`` (``github.app`` → ``OUTLAST_CREDENTIAL_GITHUB_APP``);
- ``file:PATH``: a JSON object of secrets, ``{"github": "ghp_…", "crm": {"value": {…},
  "expires_at": "2026-12-01T10:00:00Z"}}``, read again when it changes (keep it 0600);
- ``module:attribute``: a provider of your own (an object with ``async get(name)``, or a
  function that makes one). ``RefreshingProvider`` wraps a callable that mints a token
  (an OAuth refresh) and keeps it until it expires.

A provider returns a ``Credential``, ``None`` when the name is not its own, or raises
``CredentialNeeded`` to refuse (the run then asks a person). A provider that fails in
any other way is treated as a refusal that says why: an OAuth endpoint that is down should
not fail a run that a person can unblock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from outlast.config import credential_from_env
from outlast.importing import resolve
from outlast.nodes.credentials import Credential, CredentialMissing, CredentialNeeded

log = logging.getLogger(__name__)


@runtime_checkable
class CredentialProvider(Protocol):
    async def get(self, name: str) -> Credential | None: ...


class EnvProvider:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        self._environ = environ

    async def get(self, name: str) -> Credential | None:
        value = credential_from_env(name, self._environ)
        return Credential(name, value, source="env") if value else None


def _when(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    when = dt.datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


class FileProvider:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._secrets: dict[str, Any] = {}

    def _load(self) -> dict[str, Any]:
        stat = self.path.stat()
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            if stat.st_mode & 0o077:
                log.warning("%s is readable by others; make it 0600", self.path)
            data = json.loads(self.path.read_text())
            if not isinstance(data, dict):
                raise ValueError(f"{self.path}: a JSON object of secrets by name")
            self._secrets, self._stamp = data, stamp
        return self._secrets

    async def get(self, name: str) -> Credential | None:
        entry = self._load().get(name)
        if entry is None:
            return None
        if isinstance(entry, dict) and "value" in entry:
            return Credential(
                name, entry["value"], _when(entry.get("expires_at")), source=f"file:{self.path}"
            )
        return Credential(name, entry, source=f"file:{self.path}")


Minted = Credential | tuple[Any, dt.datetime | None]


class RefreshingProvider:
    """One credential, minted by ``refresh()`` (sync or async; a ``Credential`` or
    ``(value, expires_at)``) and kept until ``margin`` seconds before it expires."""

    def __init__(
        self,
        name: str,
        refresh: Callable[[], Minted | Awaitable[Minted]],
        *,
        margin: float = 30.0,
    ) -> None:
        self.name = name
        self._refresh = refresh
        self._margin = margin
        self._held: Credential | None = None
        self._lock = asyncio.Lock()

    async def get(self, name: str) -> Credential | None:
        if name != self.name:
            return None
        async with self._lock:  # one refresh at a time, however many tools ask
            held = self._held
            if held is None or held.expired(margin=self._margin):
                minted = self._refresh()
                if inspect.isawaitable(minted):
                    minted = await minted
                if isinstance(minted, Credential):
                    held = minted
                else:
                    value, expires_at = minted
                    held = Credential(name, value, expires_at, source="refresh")
                self._held = held
            return held


def _import(path: str) -> Any:
    target = resolve(path)
    if not isinstance(target, CredentialProvider) and callable(target):
        target = target()
    if not isinstance(target, CredentialProvider):
        raise TypeError(f"{path} is not a credential provider (an object with async get(name))")
    return target


def provider(spec: str) -> CredentialProvider:
    spec = spec.strip()
    if spec == "env":
        return EnvProvider()
    if spec.startswith("file:"):
        return FileProvider(Path(spec[len("file:") :]).expanduser())
    if ":" in spec:
        found: CredentialProvider = _import(spec)
        return found
    raise ValueError(f"unknown credential provider {spec!r} (env, file:PATH, module:attribute)")


@functools.lru_cache(maxsize=8)
def providers(specs: tuple[str, ...]) -> tuple[CredentialProvider, ...]:
    """One set of providers per configuration and process: a refreshed token is kept."""
    return tuple(provider(s) for s in specs)


async def ask(chain: Sequence[CredentialProvider], name: str) -> Credential | None:
    """The first provider that has ``name``; its refusal (or failure) says why."""
    for source in chain:
        try:
            found = await source.get(name)
        except CredentialNeeded:
            raise
        except Exception as exc:
            raise CredentialMissing(
                name, f"provider {type(source).__name__} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if found is not None:
            return found
    return None
