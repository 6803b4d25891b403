"""The API's edge: pydantic models for what clients send and receive.

The models say in the OpenAPI document what the server takes, also where pydantic does
not enforce it itself: strings without NUL (``NO_NUL``) are declared here and refused by
``_check_storable``, whose 422 names the reason in words.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    StrictStr,
    ValidationError,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypeAliasType

from outlast.runtime.budget import DIMENSIONS
from outlast.store import Run, Wait
from outlast.vocabulary import LEASED, RunStatus, WaitStatus

_ID = r"^[A-Za-z0-9_.:\-]{1,200}$"
ALLOWED_CONFIG_KEYS = frozenset(
    {"configurable", "tags", "metadata", "recursion_limit", "max_concurrency", "run_name"}
)

# Postgres text and jsonb cannot hold NUL: a string (or key) with one is refused, and the
# document says so, so a request it calls valid is one the store can keep.
NO_NUL = "^[^\\x00]*$"
_NoNul = Annotated[str, Field(pattern=NO_NUL)]
# Named only for the document: pydantic makes components of them, and api/document.py
# replaces their bodies with STORABLE_JSON and STORABLE_OBJECT (pydantic would say
# patternProperties, which leaves other keys unconstrained). Validation is
# _check_storable's, whose 422 names the reason in words.
StorableJSON = TypeAliasType(
    "StorableJSON",
    "bool | float | _NoNul | list[StorableJSON] | dict[_NoNul, StorableJSON] | None",
)
StorableObject = TypeAliasType("StorableObject", dict[_NoNul, StorableJSON])
_REF = "#/components/schemas/"
STORABLE_OBJECT: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": NO_NUL},
    "additionalProperties": {"$ref": _REF + "StorableJSON"},
}
STORABLE_JSON: dict[str, Any] = {
    "description": "any JSON value without NUL (\\u0000) in its strings and keys",
    # One schema over every type, not an anyOf of one per type: each keyword applies only
    # to its own type (pattern to strings, items to arrays, ...), so it says the same, and
    # schemathesis's coverage phase misreads the anyOf form nested in itself (it called
    # {"k": [{}]} invalid).
    "type": ["null", "boolean", "number", "string", "array", "object"],
    "pattern": NO_NUL,
    "items": {"$ref": _REF + "StorableJSON"},
    "propertyNames": {"pattern": NO_NUL},
    "additionalProperties": {"$ref": _REF + "StorableJSON"},
}


def _an_object(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("Input should be a valid dictionary")
    return value


JSONObject = Annotated[
    dict[str, Any], PlainValidator(_an_object, json_schema_input_type=StorableObject)
]
JSONAny = Annotated[Any, PlainValidator(lambda v: v, json_schema_input_type=StorableJSON)]
NoNulStr = Annotated[StrictStr, Field(json_schema_extra={"pattern": NO_NUL})]


def _integral(value: Any) -> Any:
    """2.0 is an integer to JSON Schema (and to LangGraph's counters): taken as 2."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Strict, so "5" and true stay refused as they were.
PositiveInt = Annotated[Annotated[int, Field(strict=True, ge=1)], BeforeValidator(_integral)]


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


class RunConfig(BaseModel):
    """What LangGraph takes as a run's config: only these keys, each of the type LangGraph
    needs (anything else would be accepted and then fail in the worker)."""

    model_config = ConfigDict(extra="forbid")

    configurable: JSONObject | None = Field(
        default=None,
        description="the graph's options; thread_id goes at the top level",
        json_schema_extra={"not": {"required": ["thread_id"]}},
    )
    tags: list[NoNulStr] | None = None
    metadata: JSONObject | None = None
    recursion_limit: PositiveInt | None = None
    max_concurrency: PositiveInt | None = None
    run_name: NoNulStr | None = None


Number = Annotated[float, Field(ge=0, strict=True, allow_inf_nan=False)]


class BudgetLimit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    soft: Number | None = Field(default=None, description="opens a budget checkpoint; at most hard")
    hard: Number | None = Field(
        default=None, description="ends the run with its best result; at most the operator cap"
    )


class Budget(BaseModel):
    """Limits per dimension; unset ones take the server's defaults and caps
    (``runtime/budget.py`` resolves them, and refuses a soft above its hard)."""

    model_config = ConfigDict(extra="forbid")

    steps: BudgetLimit | None = Field(default=None, description=DIMENSIONS["steps"])
    tool_calls: BudgetLimit | None = Field(default=None, description=DIMENSIONS["tool_calls"])
    tokens: BudgetLimit | None = Field(default=None, description=DIMENSIONS["tokens"])
    cost: BudgetLimit | None = Field(default=None, description=DIMENSIONS["cost"])
    wall_time: BudgetLimit | None = Field(default=None, description=DIMENSIONS["wall_time"])
    parallel_branches: BudgetLimit | None = Field(
        default=None, description=DIMENSIONS["parallel_branches"]
    )


def as_dict(model: BaseModel | None) -> dict[str, Any] | None:
    """The request's object as the client sent it: members it left out stay out."""
    return None if model is None else model.model_dump(exclude_unset=True)


class RunCreate(BaseModel):
    """A request to run a graph. Unknown fields are refused, so a typo is an error."""

    model_config = ConfigDict(extra="forbid")

    graph: str | None = Field(
        default=None, max_length=200, description="defaults to the first graph"
    )
    input: JSONObject = Field(
        default_factory=dict,
        description='graph input, e.g. {"messages": [{"role": "user", "content": "…"}]}',
    )
    thread_id: str | None = Field(default=None, pattern=_ID)
    config: RunConfig | None = None
    metadata: JSONObject | None = None
    budget: Budget | None = None

    @field_validator("input", "metadata")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: RunConfig | None) -> RunConfig | None:
        if value is None:
            return None
        _check_storable(as_dict(value))
        if value.configurable is not None and "thread_id" in value.configurable:
            raise ValueError("set thread_id at the top level of the request, not in config")
        return value


def check_config(value: dict[str, Any]) -> None:
    """What LangGraph takes as it comes and would fail on in the worker (both faces)."""
    unknown = sorted(set(value) - ALLOWED_CONFIG_KEYS)
    if unknown:
        raise ValueError(
            f"unsupported config keys {unknown}; allowed: {sorted(ALLOWED_CONFIG_KEYS)}"
        )
    try:
        RunConfig.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"config.{where}: {first['msg']}") from None


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        default="cancelled by request", max_length=500, json_schema_extra={"pattern": NO_NUL}
    )

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
    status: RunStatus
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
        open_waits = [w.public() for w in waits or [] if w.status == WaitStatus.OPEN]
        return cls(
            id=run.id,
            thread_id=run.thread_id,
            graph=run.graph,
            status=run.status,
            wait=open_waits[0] if open_waits and run.status == RunStatus.WAITING else None,
            waits=open_waits,
            activity=run.activity if run.status in LEASED else None,
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
    value: JSONAny = None

    @field_validator("value")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value


class SignalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    payload: JSONAny = None

    @field_validator("payload")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        _check_storable(value)
        return value


class SignalResult(BaseModel):
    key: str
    woken: int = Field(description="how many waiting runs this signal woke")
    runs: list[str]


class StreamToken(BaseModel):
    """Opens one run's events stream for a while, from where headers cannot be sent."""

    token: str
    expires_at: dt.datetime
    events_url: str = Field(description="the stream's URL with the token in it")


class ThreadRunCreate(RunCreate):
    """A run on this thread, from its latest checkpoint."""

    # The path names the thread. A body thread_id equal to it is still taken (clients
    # sent one before), but it is not in the document: one that differs is refused.
    thread_id: SkipJsonSchema[str | None] = Field(default=None, pattern=_ID)

    if_busy: Literal["reject", "enqueue"] = Field(
        default="reject",
        description="while another run of the thread is active: refuse (409) or queue behind it",
    )


class ProblemField(BaseModel):
    location: str = Field(description="where in the request, e.g. query.limit or input.x")
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details: every ``/v1`` error is answered with one."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str = Field(description="what kind of error")
    status: int
    detail: str = Field(description="what went wrong, to show as written")
    retryable: bool = Field(description="whether the same request can succeed later")
    limit: str | None = Field(
        default=None, description="the limit that refused the request (its setting's name)"
    )
    errors: list[ProblemField] | None = Field(
        default=None, description="each field a request failed validation on"
    )
