"""A run that waits for a person, asked through MCP elicitation.

When the client declared the ``elicitation`` capability and the request can carry a
server-to-client request (a stateful session, SSE responses), each open question of the
run goes to the client as ``elicitation/create`` (form mode), tied to the call that waits
(``related_request_id``). An accepted answer goes through the run service's
``answer``, the same exactly-once update as ``POST /v1/runs/{id}/input``, keyed by the
call's idempotency key and the wait, so a call retried after the answer was taken does
not answer twice; the run resumes and the call keeps waiting for it.

Elicitation forms are flat objects of primitives. A wait whose schema is one is asked as
it is; a wait that asks for a primitive is asked as one field ``answer`` of that schema;
anything else (no schema, a nested one) as an ``answer`` string, read as JSON when it
looks like a JSON object or array. Credential waits (``auth``) are never elicited: form
mode must not carry secrets.

A declined or dismissed question, an answer the wait's schema refuses three times, or a
client that cannot be asked: the call ends with the waiting result (``results.py``), and
the run keeps waiting, for ``outlast_answer`` or any other face.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from outlast.api.mcp.results import question
from outlast.errors import InvalidAnswer, OutlastError, WaitNotOpen
from outlast.service import RunService
from outlast.store import Run, Wait
from outlast.vocabulary import WaitKind

log = logging.getLogger(__name__)

PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
TRIES = 3
Form = tuple[dict[str, Any], Callable[[dict[str, Any]], Any]]


def can_elicit(mcp: ServerRequestContext[Any, Any]) -> bool:
    wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    return bool(mcp.session.can_send_request and mcp.session.check_client_capability(wanted))


def _primitive(schema: Any) -> bool:
    return isinstance(schema, dict) and (schema.get("type") in PRIMITIVES or "enum" in schema)


def _as_value(text: Any) -> Any:
    if isinstance(text, str) and text.strip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def form_of(wait: Wait) -> Form:
    """The elicitation form that asks ``wait``, and how its content becomes the answer."""
    schema = wait.schema
    if isinstance(schema, dict) and schema.get("type") == "object":
        properties = schema.get("properties")
        if (
            isinstance(properties, dict)
            and properties
            and all(map(_primitive, properties.values()))
        ):
            flat = {"type": "object", "properties": properties}
            if isinstance(schema.get("required"), list):
                flat["required"] = schema["required"]
            return flat, dict
    if _primitive(schema):
        field = schema
    else:
        field = {"type": "string", "description": "the answer (JSON for a structured one)"}
    form = {"type": "object", "properties": {"answer": field}, "required": ["answer"]}
    return form, lambda content: _as_value(content.get("answer"))


async def ask(
    mcp: ServerRequestContext[Any, Any], runs: RunService, run: Run, asked: list[Wait], key: str
) -> bool:
    """Ask each question of ``run``; True when all were answered (the run goes on)."""
    if not can_elicit(mcp) or any(w.kind == WaitKind.AUTH for w in asked):
        return False
    for wait in asked:
        if not await _ask_one(mcp, runs, run, wait, f"{key}:{wait.id}"):
            return False
    return True


async def _ask_one(
    mcp: ServerRequestContext[Any, Any], runs: RunService, run: Run, wait: Wait, key: str
) -> bool:
    form, answer_of = form_of(wait)
    message = question(wait)
    for _ in range(TRIES):
        got = await mcp.session.elicit_form(message, form, related_request_id=mcp.request_id)
        if got.action != "accept" or got.content is None:
            return False
        try:
            await runs.answer(run, wait.id, answer_of(got.content), source="mcp", key=key)
            return True
        except WaitNotOpen:
            return True  # answered meanwhile (another face, a retry): the run goes on
        except InvalidAnswer as exc:
            message = f"{question(wait)}\n(not accepted: {exc}; try again)"
        except OutlastError as exc:  # too large, or a wait that cannot be answered so
            log.info("an elicited answer to run %s was refused: %s", run.id, exc)
            return False
    return False
