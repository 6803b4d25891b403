"""Secrets at rest: every ciphertext the store holds (webhook secrets, A2A push tokens,
``auth`` answers), for ``outlast secrets check`` and ``rotate`` (``store/secrets_ops.py``)."""

from __future__ import annotations

import abc
from typing import Protocol

from outlast.store.records import Sealed


class SecretStore(Protocol):
    @abc.abstractmethod
    async def sealed_secrets(self) -> list[Sealed]:
        """Every ciphertext the store holds (``outlast secrets check`` opens each)."""

    @abc.abstractmethod
    async def reseal(self, item: Sealed, sealed: str) -> bool:
        """Replace ``item``'s ciphertext with ``sealed`` (a rotation); False, and nothing
        written, if it is no longer the one that was read."""
