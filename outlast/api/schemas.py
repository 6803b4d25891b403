"""The API's edge: pydantic models for what clients send and receive."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outlast.store import Run, Wait

_ID = r"^[A-Za-z0-9_.:\-]{1,200}$"
ALLOWED_CONFIG_KEYS = frozenset(
    {"configurable", "tags", "metadata", "recursion_limit", "max_concurrency", "run_name"}
)

Status = Literal["queued", "running", "waiting", "cancelling", "completed", "failed", "cancelled"]


def _check_storable(value: Any, depth: int = 0) -> None:
    """Refuse what JSON parsers accept but a database cannot store faithfully: NUL
    characters (Postgres text and jsonb reject them), lone surrogates (``"\\ud800"`` parses,
    but is not Unicode and cannot be encoded), NaN and infinities, absurd depth."""
    if depth > 64:
        raise ValueError("nested deeper than 64 levels")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("strings must not contain NUL (\\u0000) characters")
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError("strings must be valid Unicode (no lone surrogates)") from None
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite (no NaN or Infinity)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_storable(key, depth + 1)
            _check_storable(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_storable(item, depth + 1)


class RunCreate(BaseModel):
    """A request to run a graph. Unknown fields are refused, so a typo is an error."""

    model_config = ConfigDict(extra="forbid")

    graph: str | None = Field(
        default=None, max_length=200, description="defaults to the first graph"
    )
    input: dict[str, Any] = Field(
        default_factory=dict,
        description='graph input, e.g. {"messages": [{"role": "user", "content": "…"}]}',
    )
    thread_id: str | None = Field(default=None, pattern=_ID)
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    budget: dict[str, Any] | None = None

    @field_validator("input", "config", "metadata", "budget")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        check_config(value)
        configurable = value.get("configurable")
        if isinstance(configurable, dict) and "thread_id" in configurable:
            raise ValueError("set thread_id at the top level of the request, not in config")
        return value


def check_config(value: dict[str, Any]) -> None:
    """What LangGraph takes as it comes and would fail on in the worker (both faces)."""
    unknown = sorted(set(value) - ALLOWED_CONFIG_KEYS)
    if unknown:
        raise ValueError(
            f"unsupported config keys {unknown}; allowed: {sorted(ALLOWED_CONFIG_KEYS)}"
        )
    configurable = value.get("configurable")
    if configurable is not None and not isinstance(configurable, dict):
        raise ValueError("config.configurable must be an object")
    for name in ("recursion_limit", "max_concurrency"):
        number = value.get(name)
        if number is not None and (
            not isinstance(number, int) or isinstance(number, bool) or number < 1
        ):
            raise ValueError(f"config.{name} must be a positive integer")
    tags = value.get("tags")
    if tags is not None and not (
        isinstance(tags, list) and all(isinstance(tag, str) for tag in tags)
    ):
        raise ValueError("config.tags must be a list of strings")
    if value.get("metadata") is not None and not isinstance(value["metadata"], dict):
        raise ValueError("config.metadata must be an object")
    if value.get("run_name") is not None and not isinstance(value["run_name"], str):
        raise ValueError("config.run_name must be a string")


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(default="cancelled by request", max_length=500)

    @field_validator("reason")
    @classmethod
    def _storable(cls, value: str) -> str:
        _check_storable(value)
        return value


class Lease(BaseModel):
    worker_id: str
    epoch: int
    expires_at: dt.datetime | None


class RunSnapshot(BaseModel):
    id: str
    thread_id: str
    graph: str
    status: Status
    wait: dict[str, Any] | None = Field(
        default=None, description="what a waiting run waits for: the oldest open wait"
    )
    waits: list[dict[str, Any]] = Field(
        default_factory=list, description="every open wait (parallel branches)"
    )
    activity: dict[str, Any] | None = None
    budget: dict[str, Any] | None = Field(
        default=None, description="limits {dimension: {soft, hard}} and usage so far"
    )
    partial: bool = Field(
        default=False, description="completed by a budget with the best result available"
    )
    attempts: int
    max_attempts: int
    last_seq: int
    result: Any = None
    error: dict[str, Any] | None = None
    lease: Lease | None = None
    model: str | None = Field(
        default=None,
        description="the chat model the run calls, fixed at acceptance ('scripted' = the "
        "deterministic offline model)",
    )
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: dt.datetime
    updated_at: dt.datetime

    @classmethod
    def of(cls, run: Run, waits: list[Wait] | None = None) -> RunSnapshot:
        error = None
        if run.error is not None:
            # The traceback stays in the database and the worker's log.
            error = {k: v for k, v in run.error.items() if k != "traceback"}
        lease = None
        if run.worker_id is not None:
            lease = Lease(
                worker_id=run.worker_id, epoch=run.lease_epoch, expires_at=run.lease_expires_at
            )
        open_waits = [w.public() for w in waits or [] if w.status == "open"]
        return cls(
            id=run.id,
            thread_id=run.thread_id,
            graph=run.graph,
            status=run.status.value,
            wait=open_waits[0] if open_waits and run.status.value == "waiting" else None,
            waits=open_waits,
            activity=run.activity if run.status.value in ("running", "cancelling") else None,
            budget={"limits": run.budget, "usage": _usage(run)} if run.budget else None,
            partial=bool((run.usage or {}).get("partial")),
            attempts=run.attempts,
            max_attempts=run.max_attempts,
            last_seq=run.last_seq,
            result=run.result,
            error=error,
            lease=lease,
            model=_model(run),
            metadata=run.metadata,
            created_at=run.created_at,
            updated_at=run.updated_at,
        )


def _model(run: Run) -> str | None:
    configurable = (run.config or {}).get("configurable")
    model = configurable.get("model") if isinstance(configurable, dict) else None
    return str(model) if model is not None else None


def _usage(run: Run) -> dict[str, Any] | None:
    if run.usage is None:
        return None
    return {k: v for k, v in run.usage.items() if k != "partial"}


class RunPage(BaseModel):
    runs: list[RunSnapshot]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next (older) page")


class InputRequest(BaseModel):
    """An answer to a wait. ``value`` is checked against the wait's JSON schema."""

    model_config = ConfigDict(extra="forbid")

    wait_id: str = Field(max_length=100)
    value: Any = None

    @field_validator("value")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value


class SignalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    payload: Any = None

    @field_validator("payload")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value


class SignalResult(BaseModel):
    key: str
    woken: int = Field(description="how many waiting runs this signal woke")
    runs: list[str]


class ThreadRunCreate(RunCreate):
    """A run on this thread, from its latest checkpoint."""

    if_busy: Literal["reject", "enqueue"] = Field(
        default="reject",
        description="while another run of the thread is active: refuse (409) or queue behind it",
    )
