"""What LangGraph's clients send, as pydantic models at the face's edge.

Fields follow the map (``langgraph-api-compat.md`` §A) and what ``langgraph_sdk`` and
the JS SDK actually send; unknown fields are ignored rather than refused, because the
SDKs add fields release by release (``strict_resume`` appeared in 0.4.14) and a client a
version ahead must still work. Values are checked for what the store cannot keep (NUL,
lone surrogates, non-finite numbers), as on ``/v1``. The shapes protocol v2 reads too
(the base, a run request, a command, a checkpoint) are in ``api/lgshared.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from outlast.api.lgshared import CheckpointRef as CheckpointRef
from outlast.api.lgshared import Command as Command
from outlast.api.lgshared import Lenient
from outlast.api.lgshared import RunCreate as RunCreate

_Lenient = Lenient  # the LangGraph face's own name for it
_THREAD_ID = r"^[A-Za-z0-9_.:\-]{1,200}$"


class SuperstepUpdate(_Lenient):
    values: dict[str, Any] | None = None
    as_node: str = Field(max_length=200)


class Superstep(_Lenient):
    updates: list[SuperstepUpdate]


# A TTL in minutes, from a second to a century (both stores' date arithmetic holds there).
Minutes = Annotated[float, Field(ge=1 / 60, le=100 * 365 * 24 * 60)]


class ThreadTTL(_Lenient):
    """``client.threads.create(ttl=…)``: the SDK sends ``{"ttl": minutes, "strategy":
    "delete"}`` (a bare number becomes that); ``keep_latest`` keeps the thread and
    prunes its history to its latest state."""

    ttl: Minutes
    strategy: Literal["delete", "keep_latest"] = "delete"


def ttl_minutes(ttl: ThreadTTL | float | None) -> float | None:
    return ttl.ttl if isinstance(ttl, ThreadTTL) else ttl


def ttl_strategy(ttl: ThreadTTL | float | None) -> Literal["delete", "keep_latest"]:
    return ttl.strategy if isinstance(ttl, ThreadTTL) else "delete"


class ThreadPrune(_Lenient):
    """``client.threads.prune(thread_ids, strategy=…)``; the SDK leaves ``strategy`` out
    for ``delete``."""

    thread_ids: list[Annotated[str, Field(pattern=_THREAD_ID)]] = Field(max_length=1000)
    strategy: Literal["delete", "keep_latest"] = "delete"


class ThreadCreate(_Lenient):
    thread_id: str | None = Field(default=None, pattern=_THREAD_ID)
    metadata: dict[str, Any] = Field(default_factory=dict)
    if_exists: Literal["raise", "do_nothing"] = "raise"
    ttl: ThreadTTL | Minutes | None = None
    supersteps: list[Superstep] | None = Field(default=None, max_length=100)


# A page offset: past 2**31 - 1 no database binds it (SQLite overflows at 2**63, and no
# listing is that long), so it is refused as bad input rather than failing the query.
MAX_OFFSET = 2**31 - 1
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


class ThreadSearch(_Lenient):
    ids: list[str] | None = None
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0
    sort_by: Literal["thread_id", "status", "created_at", "updated_at", "state_updated_at"] = (
        "created_at"
    )
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[str] | None = None
    # alias → a path into the thread (``values.messages[-1].content``), at most 10
    extract: dict[str, Annotated[str, StringConstraints(max_length=500)]] | None = Field(
        default=None, max_length=10
    )


class ThreadCount(_Lenient):
    metadata: dict[str, Any] | None = None
    values: dict[str, Any] | None = None
    status: Literal["idle", "busy", "interrupted", "error"] | None = None


class ThreadPatch(_Lenient):
    metadata: dict[str, Any] = Field(default_factory=dict)
    ttl: ThreadTTL | Minutes | None = None


class StateUpdate(_Lenient):
    values: dict[str, Any] | list[Any] | None = None
    as_node: str | None = Field(default=None, max_length=200)
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = Field(default=None, max_length=200)


class StateAtCheckpoint(_Lenient):
    checkpoint: CheckpointRef
    subgraphs: bool = False


class BulkCancel(_Lenient):
    thread_id: str | None = None
    run_ids: list[str] | None = None
    status: Literal["pending", "running", "all"] | None = None
