"""The LangGraph face's assistants (written once for both backends in
``store/assistants.py``).

User assistants only (system assistants are not stored), each visible to its principal
alone. Mutators raise AssistantNotFound (store/assistants.py) when the principal has no
such assistant. None of them appends events or notifies.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

from outlast.store.records import Assistant


class AssistantStore(Protocol):
    @abc.abstractmethod
    async def create_assistant(
        self,
        *,
        assistant_id: str,
        graph_id: str,
        name: str,
        description: str | None = None,
        config: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_exists: str = "raise",
        principal: str = "",
    ) -> tuple[Assistant, bool]:
        """Insert it with its version 1; ``(assistant, created)``. A taken id is
        AssistantExists, unless ``if_exists == "do_nothing"`` and it is the caller's
        (returned unchanged). Concurrent creates of one id make one assistant."""

    @abc.abstractmethod
    async def get_assistant(
        self, assistant_id: str, principal: str | None = ""
    ) -> Assistant | None:
        """The principal's assistant, or None (also when another principal owns it)."""

    @abc.abstractmethod
    async def search_assistants(
        self,
        *,
        principal: str | None = "",
        metadata: dict[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> tuple[list[Assistant], int]:
        """A page and the total count. ``metadata``: each key has exactly that value;
        ``name``: case-insensitive substring; ties sorted by id ascending. ValueError
        for a ``sort_by`` outside ``SORT_FIELDS`` (the query knows only those)."""

    @abc.abstractmethod
    async def count_assistants(
        self,
        *,
        principal: str | None = "",
        metadata: dict[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
    ) -> int:
        """How many of the principal's assistants match, as ``search_assistants``."""

    @abc.abstractmethod
    async def update_assistant(
        self, assistant_id: str, changes: dict[str, Any], *, principal: str | None = ""
    ) -> Assistant:
        """A new current version (highest + 1, so a version once made is never reused):
        given fields replace, metadata merges. ValueError for a field not updatable."""

    @abc.abstractmethod
    async def delete_assistant(self, assistant_id: str, *, principal: str | None = "") -> None:
        """Delete the assistant and all its versions."""

    @abc.abstractmethod
    async def list_assistant_versions(
        self,
        assistant_id: str,
        *,
        principal: str | None = "",
        metadata: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Assistant]:
        """Newest first; a version's ``updated_at`` is its ``created_at``."""

    @abc.abstractmethod
    async def set_latest_assistant_version(
        self, assistant_id: str, version: int, *, principal: str | None = ""
    ) -> Assistant:
        """Copy a stored version back as the current fields (no new version);
        AssistantNotFound for an unknown version too."""
