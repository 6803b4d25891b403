"""The params of each command, as the protocol's clients send them (``langchain_protocol``
names them: ``RunStartParams``, ``InputRespondParams``, …), checked at the edge.

Fields are the wire's snake_case (``langgraph_sdk`` 0.4 and the JS SDK send them so).
Unknown fields are ignored (the protocol's records are ``Extensible``), and values are
checked for what the store cannot keep, as every body of the LangGraph face is. A refusal
names the field (``params.assistant_id: Field required``).
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import AliasChoices, Field, ValidationError, model_validator

from outlast.api.lgshared import Lenient

Namespace = list[str]
_ID = Field(min_length=1, max_length=200)


class RunStartParams(Lenient):
    assistant_id: str = _ID
    input: Any = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    # Not in the spec: the JS SDK's ``submitRun`` sends it (camelCase) beside the params.
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = Field(
        default=None, validation_alias=AliasChoices("multitask_strategy", "multitaskStrategy")
    )


class RunSend(Lenient):
    node: str = _ID
    input: Any = None


Goto = str | RunSend | list[str | RunSend]


class InputRespondEntry(Lenient):
    namespace: Namespace = Field(default_factory=list)
    interrupt_id: str = _ID
    response: Any


class InputRespondParams(Lenient):
    """``InputRespondOne`` (``interrupt_id`` and ``response``) or ``InputRespondMany``
    (``responses``), with the ``update`` / ``goto`` applied in the resuming step."""

    namespace: Namespace = Field(default_factory=list)
    interrupt_id: str | None = Field(default=None, min_length=1, max_length=200)
    response: Any = None
    responses: list[InputRespondEntry] | None = Field(default=None, min_length=1, max_length=100)
    update: dict[str, Any] | None = None
    goto: Goto | None = None
    config: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.interrupt_id is None) == (self.responses is None):
            raise ValueError("give either interrupt_id (with response) or responses")
        if self.interrupt_id is not None and "response" not in self.model_fields_set:
            raise ValueError("response is required with interrupt_id")
        return self

    def answers(self) -> dict[str, Any]:
        """Interrupt id → response, for the one form and the batch alike."""
        if self.responses is not None:
            return {e.interrupt_id: e.response for e in self.responses}
        assert self.interrupt_id is not None
        return {self.interrupt_id: self.response}

    def goto_json(self) -> Any:
        """``goto`` as the run's options keep it (``runtime/options.py:as_command``)."""
        if isinstance(self.goto, list):
            return [g.model_dump() if isinstance(g, RunSend) else g for g in self.goto]
        return self.goto.model_dump() if isinstance(self.goto, RunSend) else self.goto


class InputMessage(Lenient):
    role: Literal["user", "system"]
    content: str
    name: str | None = None


class InputInjectParams(Lenient):
    namespace: Namespace = Field(default_factory=list)
    message: InputMessage


class StateGetParams(Lenient):
    namespace: Namespace = Field(default_factory=list)
    keys: list[str] | None = None


class ListCheckpointsParams(Lenient):
    namespace: Namespace = Field(default_factory=list)
    limit: int = Field(default=100, ge=1, le=1000)
    before: str | None = Field(default=None, min_length=1, max_length=200)


class StateForkParams(Lenient):
    checkpoint_id: str = _ID
    input: Any = None
    config: dict[str, Any] | None = None


class AgentGetTreeParams(Lenient):
    run_id: str | None = Field(default=None, min_length=1, max_length=100)


def explain(exc: ValidationError, prefix: str = "params") -> str:
    """A refusal that names each field, e.g. ``params.assistant_id: Field required``."""
    parts = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in (prefix, *e.get("loc", ())))
        parts.append(f"{loc}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or f"{prefix}: invalid"
