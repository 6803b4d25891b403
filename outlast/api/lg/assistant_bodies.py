"""The request bodies of ``/assistants/...`` (``assistants.py``), as LangGraph's clients
send them; unknown fields are ignored, as everywhere on this face."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from outlast.api.lg.schemas import Offset

SortBy = Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"]
SelectField = Literal[
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
]


class Filters(BaseModel):
    metadata: dict[str, Any] | None = None
    graph_id: str | None = None
    name: str | None = None


class SearchBody(Filters):
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0
    sort_by: SortBy | None = None
    sort_order: Literal["asc", "desc"] | None = None
    select: list[SelectField] | None = None


class CreateBody(BaseModel):
    graph_id: str
    assistant_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    if_exists: Literal["raise", "do_nothing"] = "raise"
    name: str | None = None
    description: str | None = None


class PatchBody(BaseModel):
    graph_id: str | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    name: str | None = None
    description: str | None = None


class VersionsBody(BaseModel):
    metadata: dict[str, Any] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0


class LatestBody(BaseModel):
    version: int = Field(ge=1)
