"""User assistants of the LangGraph face, and their versions, written once for both
backends over ``_reading()`` / ``_writing()`` and the named queries of ``queries_assistants.sql``.

An assistant is a graph with a configuration, owned by the principal that created it:
every statement names the principal, so another principal's assistant does not exist for
the caller. System assistants (one per configured graph) are not stored; the API adds
them (``api/lg/assistants.py``).

Versions: the current fields live in ``outlast_assistants``, and every version, the
current one included, is a row of ``outlast_assistant_versions``. An update writes the
next version number (the highest stored + 1, not the current + 1: after ``set_latest``
went back to version 1, the next update is version 3, and version 2 stays as it was).
The version number is read under the assistant's row lock (Postgres ``FOR UPDATE``;
SQLite's ``BEGIN IMMEDIATE``), so two concurrent updates get two different versions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from outlast.errors import OutlastError
from outlast.store.base import Assistant
from outlast.store.tx import Tx, TxProvider, stored_time

SORT_FIELDS = frozenset({"assistant_id", "graph_id", "name", "created_at", "updated_at"})
# What an update may change; ``metadata`` is merged into the current metadata, the other
# fields replace theirs.
UPDATABLE = frozenset({"graph_id", "name", "description", "config", "context", "metadata"})


class AssistantNotFound(OutlastError):
    status = 404
    title = "Assistant not found"


class AssistantExists(OutlastError):
    status = 409
    title = "Assistant already exists"


def _assistant(tx: Tx, row: Mapping[str, Any]) -> Assistant:
    """A row of ``outlast_assistants``, or of ``outlast_assistant_versions`` (a version
    has no ``updated_at`` nor ``principal``: its time is when it was made)."""
    created = stored_time(row["created_at"])
    return Assistant(
        assistant_id=str(row["assistant_id"]),
        graph_id=row["graph_id"],
        name=row["name"],
        description=row["description"],
        config=tx.decode_json(row["config"]) or {},
        context=tx.decode_json(row["context"]) or {},
        metadata=tx.decode_json(row["metadata"]) or {},
        version=int(row["version"]),
        created_at=created,
        updated_at=stored_time(row["updated_at"]) if "updated_at" in row else created,
        principal=row.get("principal", ""),
    )


def _filters(
    tx: Tx, metadata: Mapping[str, Any] | None, graph_id: str | None, name: str | None
) -> dict[str, Any]:
    return {
        "metadata": tx.encode_json(dict(metadata)) if metadata else None,
        "graph_id": graph_id,
        "assistant_name": name or None,
    }


class AssistantOps(TxProvider):
    async def create_assistant(
        self,
        *,
        assistant_id: str,
        graph_id: str,
        name: str,
        description: str | None = None,
        config: Mapping[str, Any] | None = None,
        context: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        if_exists: str = "raise",
        principal: str = "",
    ) -> tuple[Assistant, bool]:
        """Insert the assistant and its version 1 in one transaction; ``(assistant,
        created)``. The id is unique in the database: of concurrent creates with one id,
        one inserts and the others find its row. An existing id is AssistantExists,
        unless ``if_exists == "do_nothing"`` and it is the caller's own (then it is
        returned as it is); another principal's assistant is never returned."""
        async with self._writing() as tx:
            rows = await tx.rows(
                "a_insert",
                assistant_id=assistant_id,
                principal=principal,
                graph_id=graph_id,
                assistant_name=name,
                description=description,
                config=tx.encode_json(dict(config or {})),
                context=tx.encode_json(dict(context or {})),
                metadata=tx.encode_json(dict(metadata or {})),
            )
            if rows:
                await tx.rows("a_snapshot_version", assistant_id=assistant_id)
                return _assistant(tx, rows[0]), True
            if if_exists == "do_nothing":
                mine = await tx.rows("a_get", assistant_id=assistant_id, principal=principal)
                if mine:
                    return _assistant(tx, mine[0]), False
        raise AssistantExists(f"Assistant {assistant_id} already exists")

    async def get_assistant(
        self, assistant_id: str, principal: str | None = ""
    ) -> Assistant | None:
        async with self._reading() as tx:
            rows = await tx.rows("a_get", assistant_id=assistant_id, principal=principal)
            return _assistant(tx, rows[0]) if rows else None

    async def search_assistants(
        self,
        *,
        principal: str | None = "",
        metadata: Mapping[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> tuple[list[Assistant], int]:
        """One page of the principal's assistants and how many match in all. Metadata
        matches when every given key has exactly the given value; ``name`` is a
        case-insensitive substring. Ties in the sort key are ordered by id, ascending."""
        if sort_by not in SORT_FIELDS:
            raise ValueError(f"cannot sort assistants by {sort_by!r}")
        async with self._reading() as tx:
            where = _filters(tx, metadata, graph_id, name)
            rows = await tx.rows(
                "a_search",
                principal=principal,
                **where,
                sort_by=sort_by,
                desc=sort_order == "desc",
                limit=limit,
                offset=offset,
            )
            total = (await tx.rows("a_count", principal=principal, **where))[0]["n"]
            return [_assistant(tx, r) for r in rows], int(total)

    async def count_assistants(
        self,
        *,
        principal: str | None = "",
        metadata: Mapping[str, Any] | None = None,
        graph_id: str | None = None,
        name: str | None = None,
    ) -> int:
        async with self._reading() as tx:
            rows = await tx.rows(
                "a_count", principal=principal, **_filters(tx, metadata, graph_id, name)
            )
            return int(rows[0]["n"])

    async def update_assistant(
        self, assistant_id: str, changes: Mapping[str, Any], *, principal: str | None = ""
    ) -> Assistant:
        """A new version from ``changes`` (keys of UPDATABLE; absent keys keep their
        value, ``metadata`` is merged), made current; AssistantNotFound if the principal
        has no such assistant."""
        unknown = set(changes) - UPDATABLE
        if unknown:
            raise ValueError(f"cannot update assistant fields {sorted(unknown)}")
        async with self._writing() as tx:
            locked = await tx.rows("a_lock", assistant_id=assistant_id, principal=principal)
            if not locked:
                raise AssistantNotFound(f"Assistant {assistant_id} not found")
            current = _assistant(tx, locked[0])
            version = (await tx.rows("a_next_version", assistant_id=assistant_id))[0]["version"]
            rows = await tx.rows(
                "a_update",
                assistant_id=assistant_id,
                principal=principal,
                graph_id=changes.get("graph_id", current.graph_id),
                assistant_name=changes.get("name", current.name),
                description=changes.get("description", current.description),
                config=tx.encode_json(dict(changes.get("config", current.config))),
                context=tx.encode_json(dict(changes.get("context", current.context))),
                metadata=tx.encode_json({**current.metadata, **dict(changes.get("metadata", {}))}),
                version=int(version),
            )
            await tx.rows("a_snapshot_version", assistant_id=assistant_id)
            return _assistant(tx, rows[0])

    async def delete_assistant(self, assistant_id: str, *, principal: str | None = "") -> None:
        """Delete the assistant and its versions (the foreign key cascades)."""
        async with self._writing() as tx:
            if not await tx.rows("a_delete", assistant_id=assistant_id, principal=principal):
                raise AssistantNotFound(f"Assistant {assistant_id} not found")

    async def list_assistant_versions(
        self,
        assistant_id: str,
        *,
        principal: str | None = "",
        metadata: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Assistant]:
        """The assistant's versions, newest first (``updated_at`` is the version's own
        time); AssistantNotFound if the principal has no such assistant."""
        async with self._reading() as tx:
            if not await tx.rows("a_get", assistant_id=assistant_id, principal=principal):
                raise AssistantNotFound(f"Assistant {assistant_id} not found")
            rows = await tx.rows(
                "a_versions",
                assistant_id=assistant_id,
                principal=principal,
                metadata=tx.encode_json(dict(metadata)) if metadata else None,
                limit=limit,
                offset=offset,
            )
            return [_assistant(tx, r) for r in rows]

    async def set_latest_assistant_version(
        self, assistant_id: str, version: int, *, principal: str | None = ""
    ) -> Assistant:
        """Make a stored version current again (its fields copied back; no new
        version); AssistantNotFound for an unknown assistant or version."""
        async with self._writing() as tx:
            rows = await tx.rows(
                "a_set_latest", assistant_id=assistant_id, principal=principal, version=version
            )
            if rows:
                return _assistant(tx, rows[0])
            if await tx.rows("a_get", assistant_id=assistant_id, principal=principal):
                raise AssistantNotFound(f"Assistant {assistant_id} has no version {version}")
            raise AssistantNotFound(f"Assistant {assistant_id} not found")
