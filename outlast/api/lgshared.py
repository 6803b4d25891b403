"""What the two faces that speak LangGraph share at their edge: the LangGraph face's routes
(``api/lg``) and protocol v2's commands (``api/protocol``), neither importing the other.

- ``Lenient``: the base of every body either reads. Fields follow the map
  (``langgraph-api-compat.md`` §A) and what ``langgraph_sdk`` and the JS SDK actually
  send; unknown fields are ignored rather than refused, because the SDKs add fields
  release by release (``strict_resume`` appeared in 0.4.14) and a client a version ahead
  must still work. Values are checked for what the store cannot keep (NUL, lone
  surrogates, non-finite numbers), as on ``/v1``.
- ``RunCreate``: a run request, as pydantic reads it; the run service takes it as a
  ``LaunchRequest`` (``service/launch.py``), through ``launcher``, bound to the request's
  caller, headers and the face's config check.
- ``HistoryQuery``: a history read.
- ``state_json``: a thread's state (LangGraph's ``StateSnapshot``) as both faces write it.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from langgraph.types import StateSnapshot
from pydantic import BaseModel, ConfigDict, Field, model_validator

from outlast.api.context import AppContext
from outlast.api.schemas import _check_storable, check_config
from outlast.jsonable import to_jsonable
from outlast.service.launch import Launcher, LaunchRequest, stream_modes


class Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="after")
    def _storable(self) -> Self:
        """Everything a body carries, checked once for what the store cannot keep."""
        _check_storable(self.model_dump())
        return self


class CheckpointRef(Lenient):
    checkpoint_id: str | None = Field(default=None, max_length=200)
    checkpoint_ns: str = Field(default="", max_length=2000)
    checkpoint_map: dict[str, Any] | None = None
    thread_id: str | None = None


class HistoryQuery(Lenient):
    limit: int = Field(default=10, ge=1, le=1000)
    before: CheckpointRef | str | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None

    @property
    def before_id(self) -> str | None:
        before = self.before
        return before if isinstance(before, str) or before is None else before.checkpoint_id


class Command(Lenient):
    resume: Any = None
    update: dict[str, Any] | list[Any] | None = None
    goto: Any = None


class RunCreate(Lenient):
    """The body of every run-creating endpoint (stateful, stateless, stream, wait)."""

    assistant_id: str = Field(max_length=200)
    input: dict[str, Any] | list[Any] | None = None
    command: Command | None = None
    stream_mode: str | list[str] = Field(default_factory=lambda: ["values"])
    stream_subgraphs: bool = False
    stream_resumable: bool = False
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint: CheckpointRef | None = None
    checkpoint_id: str | None = Field(default=None, max_length=200)
    checkpoint_during: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] = "enqueue"
    if_not_exists: Literal["reject", "create"] = "reject"
    on_disconnect: Literal["cancel", "continue"] = "continue"
    on_completion: Literal["delete", "keep"] = "delete"
    after_seconds: float | None = Field(default=None, ge=0, le=366 * 86400)
    strict_resume: bool = False
    webhook: str | None = None
    feedback_keys: list[str] | None = None

    def modes(self) -> list[str]:
        """The requested modes; an empty list (useStream sends one) means ``values``."""
        return stream_modes(self.stream_mode)

    def resumes(self) -> bool:
        return self.command is not None and "resume" in self.command.model_fields_set

    def launch_request(self) -> LaunchRequest:
        """The request in the run service's terms."""
        fork = self.checkpoint_id or (self.checkpoint.checkpoint_id if self.checkpoint else None)
        return LaunchRequest(
            assistant_id=self.assistant_id,
            input=self.input,
            command=self.command.model_dump(exclude_unset=True) if self.command else None,
            stream_mode=self.stream_mode,
            stream_mode_given="stream_mode" in self.model_fields_set,
            stream_subgraphs=self.stream_subgraphs,
            config=self.config,
            context=self.context,
            metadata=self.metadata,
            checkpoint_id=fork,
            checkpoint_during=self.checkpoint_during,
            durability=self.durability,
            interrupt_before=self.interrupt_before,
            interrupt_after=self.interrupt_after,
            multitask_strategy=self.multitask_strategy,
            if_not_exists=self.if_not_exists,
            on_completion=self.on_completion,
            after_seconds=self.after_seconds,
            strict_resume=self.strict_resume,
            webhook=self.webhook,
            feedback_keys=self.feedback_keys,
        )


def launcher(ctx: AppContext) -> Launcher:
    """The run service's LangGraph run starts for this request's caller: its headers a
    run gets in ``configurable`` and whether its webhooks are sent (langgraph.json
    ``http``), and the config check every face makes (``api/schemas.py:check_config``)."""
    return Launcher(ctx.runs, check_config, ctx.http.configurable, ctx.http.webhooks)


# -- a thread's state, as both faces write it -------------------------------------------


def interrupt_json(item: Any, with_schema: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"value": to_jsonable(item.value), "id": item.id}
    schema = getattr(item, "response_schema", None)
    if with_schema:
        out["response_schema"] = schema if isinstance(schema, dict) else None
    return out


def checkpoint_json(config: Any, thread_id: str) -> dict[str, Any] | None:
    configurable = (config or {}).get("configurable") or {}
    if not configurable.get("checkpoint_id"):
        return None
    return {
        "thread_id": thread_id,
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable["checkpoint_id"],
        "checkpoint_map": configurable.get("checkpoint_map"),
    }


EMPTY_STATE: dict[str, Any] = {
    "values": {},
    "next": [],
    "tasks": [],
    "metadata": None,
    "created_at": None,
    "checkpoint": None,
    "parent_checkpoint": None,
    "interrupts": [],
    "checkpoint_id": None,
    "parent_checkpoint_id": None,
}


def state_json(state: StateSnapshot, thread_id: str) -> dict[str, Any]:
    checkpoint = checkpoint_json(state.config, thread_id)
    if checkpoint is None:
        return dict(EMPTY_STATE)
    parent = checkpoint_json(state.parent_config, thread_id)
    tasks = []
    for task in state.tasks:
        sub = task.state
        tasks.append(
            {
                "id": task.id,
                "name": task.name,
                "path": to_jsonable(list(task.path)),
                "error": repr(task.error) if task.error else None,
                "interrupts": [interrupt_json(i, with_schema=False) for i in task.interrupts],
                "checkpoint": (sub.get("configurable") if isinstance(sub, dict) else None),
                "state": state_json(sub, thread_id) if isinstance(sub, StateSnapshot) else None,
                "result": to_jsonable(task.result),
            }
        )
    return {
        "values": to_jsonable(state.values),
        "next": list(state.next),
        "tasks": tasks,
        "metadata": to_jsonable(state.metadata),
        "created_at": state.created_at,
        "checkpoint": checkpoint,
        "parent_checkpoint": parent,
        "interrupts": [interrupt_json(i) for i in state.interrupts],
        "checkpoint_id": checkpoint["checkpoint_id"],
        "parent_checkpoint_id": parent["checkpoint_id"] if parent else None,
    }
