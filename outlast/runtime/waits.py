"""Pending interrupts → waits, and back for the waits the runtime opens itself.

An interrupt raised through ``outlast.nodes`` carries a typed payload (``outlast_wait``);
any other ``interrupt(value)`` is a ``human`` wait whose prompt is the value. The
response schema (``interrupt(..., response_schema=…)``) becomes the wait's JSON schema,
which the API checks answers against.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from langgraph.types import Interrupt
from pydantic import TypeAdapter

from outlast.jsonable import to_jsonable
from outlast.nodes.waits import WAIT_KEY
from outlast.store import Wait, WaitSpec
from outlast.vocabulary import WAIT_KINDS


def json_schema(schema: Any) -> dict[str, Any] | None:
    if schema is None:
        return None
    if isinstance(schema, dict):
        return schema
    try:
        return TypeAdapter(schema).json_schema()
    except Exception:  # a type pydantic cannot describe: accept any answer
        return None


def spec_from_interrupt(item: Interrupt) -> WaitSpec:
    schema = json_schema(getattr(item, "response_schema", None))
    value = item.value
    typed = value.get(WAIT_KEY) if isinstance(value, dict) else None
    if not isinstance(typed, dict):
        return WaitSpec(
            interrupt_id=item.id,
            kind="human",
            prompt=to_jsonable(value),
            schema=schema,
            value=to_jsonable(value),
        )
    kind = typed.get("kind") if typed.get("kind") in WAIT_KINDS else "human"
    wake_at = None
    wake_in = typed.get("timeout")
    if kind == "timer":
        wake_at = dt.datetime.fromisoformat(str(typed["until"]))
    probe = typed.get("probe")
    if kind == "external" and isinstance(probe, dict):
        wake_in = 0.0  # the first probe goes out at once
    keys = typed.get("keys")
    return WaitSpec(
        interrupt_id=item.id,
        kind=str(kind),
        object=to_jsonable(typed.get("object")),
        prompt=to_jsonable(typed.get("prompt")),
        schema=schema,
        event_keys=[str(k) for k in keys] if isinstance(keys, list) else None,
        wake_at=wake_at,
        wake_in=float(wake_in) if wake_in is not None else None,
        has_default=bool(typed.get("has_default", False)),
        default=to_jsonable(typed.get("default")),
        probe=to_jsonable(probe) if isinstance(probe, dict) else None,
        value=to_jsonable(value),
    )


def wait_interrupt(wait: Wait) -> dict[str, Any]:
    """A wait of the runtime's own, shown as the interrupt it stands for: the payload
    outlast's own waits carry (``outlast_wait``), under the wait's interrupt id, which
    ``command.resume`` may name."""
    value = runtime_payload(wait.kind, wait.object, wait.prompt)
    return {"value": value, "id": wait.interrupt_id, "response_schema": wait.schema}


def runtime_payload(kind: str, object_: Any, prompt: Any) -> dict[str, Any]:
    """What a wait no interrupt of the graph raised (the runtime's own) asks, in the shape
    of the payload outlast's own waits carry."""
    return {WAIT_KEY: {"kind": kind, "object": object_, "prompt": prompt}}
