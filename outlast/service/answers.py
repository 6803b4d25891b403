"""An answer to a wait, whatever face brings it: the same checks, the same sealing.

An answer is checked (its size, that the wait is one a client answers, the wait's schema),
then stored, an ``auth`` answer sealed, since it is a credential; the store answers the
wait with a conditional update, so of any number of concurrent answers exactly one
resumes the run. Every face that answers goes through ``prepared``: the store refuses an
``auth`` answer in the clear, and a face that forgot the size check (A2A once did) cannot.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import jsonschema

from outlast.config import Settings
from outlast.errors import InvalidAnswer, WaitNotOpen, WhichWait
from outlast.secretbox import SecretBox
from outlast.service.admission import check_size
from outlast.store import Wait
from outlast.vocabulary import ANSWERABLE_KINDS, WaitKind, WaitStatus

log = logging.getLogger(__name__)

_HOW: dict[str, str] = {
    WaitKind.TIMER: "it ends at its time",
    WaitKind.EXTERNAL: "it ends when the provider's job is done",
    WaitKind.EVENT: "it ends with POST /v1/signals/{key}",
}


def check_against(schema: dict[str, Any] | None, value: Any, *, secret: bool = False) -> None:
    """``value`` against a wait's JSON schema. ``secret``: the value is a credential, so
    no message quotes it back."""
    if secret and value is None:
        raise InvalidAnswer("value: a credential cannot be null")
    if schema is None:
        return
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "value"
        if secret:
            raise InvalidAnswer(
                f"{where}: not the shape this credential wait asks for ({_shape(schema)}); "
                "the value is not repeated here"
            ) from None
        raise InvalidAnswer(f"{where}: {exc.message}") from None
    except jsonschema.SchemaError as exc:  # the graph declared an invalid schema
        raise InvalidAnswer(f"the wait's schema is invalid: {exc.message}") from None
    except OverflowError:  # a huge integer against a fractional multipleOf
        raise InvalidAnswer("value: number too large to check against the schema") from None
    except Exception as exc:  # a schema that cannot be applied: a circular or unresolvable $ref
        log.warning("a wait's schema cannot be applied: %r", exc)
        raise InvalidAnswer(f"the wait's schema cannot be applied ({type(exc).__name__})") from None


def _shape(schema: dict[str, Any]) -> str:
    if "oneOf" in schema:
        return 'a string, or {"value": ..., "expires_at": "<ISO 8601>"}'
    return f"JSON schema type {schema.get('type', 'any')}"


def prepared(settings: Settings, wait: Wait, value: Any, what: str = "the answer") -> Any:
    """The answer as it is stored, once checked: within ``max_answer_bytes``, for a wait
    a client answers, of the wait's shape; an ``auth`` wait's sealed (``secretbox``).
    A wait that is no longer open is not checked against its schema: the store tells a
    retry of the answer it took (same key) from a second answer (409)."""
    check_size(value, settings.max_answer_bytes, what, "max_answer_bytes")
    if wait.status == WaitStatus.OPEN:
        if wait.kind not in ANSWERABLE_KINDS:
            raise WaitNotOpen(f"a {wait.kind} wait is not answered with input: {_HOW[wait.kind]}")
        check_against(wait.schema, value, secret=wait.kind == WaitKind.AUTH)
    if wait.kind != WaitKind.AUTH:
        return value
    return SecretBox.from_settings(settings).seal_answer(value)


_LOOKS_LIKE_ID = re.compile(r"^[0-9a-f]{32}$")


def by_interrupt_id(answers: dict[str, Any], waits: Sequence[Wait]) -> dict[str, Any]:
    """Answers keyed by interrupt id, as wait id → value; an id that is not pending
    refuses them all (``WaitNotOpen``), rather than partly taking them."""
    by_interrupt = {w.interrupt_id: w for w in waits}
    unknown = sorted(k for k in answers if k not in by_interrupt)
    if unknown:
        raise WaitNotOpen(
            f"resume names interrupts that are not pending: {unknown}; "
            f"pending: {sorted(by_interrupt)}"
        )
    return {by_interrupt[k].id: v for k, v in answers.items()}


def resumed_waits(resume: Any, waits: Sequence[Wait], strict: bool) -> dict[str, Any]:
    """Which wait each part of a LangGraph ``Command(resume=…)`` answers (wait id →
    value): a map keyed by interrupt id, or one value when exactly one interrupt is
    pending. ``strict`` (LangGraph's ``strict_resume``): a map that names interrupts not
    pending is refused (``WaitNotOpen``) rather than partly taken. A single value for a
    run that asks several things is refused (``WhichWait``): which one it answers is
    the client's to say. The messages are LangGraph's server's own."""
    by_interrupt = {w.interrupt_id: w for w in waits}
    if isinstance(resume, dict) and resume and any(k in by_interrupt for k in resume):
        if strict:
            return by_interrupt_id(resume, waits)
        return {by_interrupt[k].id: v for k, v in resume.items() if k in by_interrupt}
    if (
        strict
        and isinstance(resume, dict)
        and resume
        and all(_LOOKS_LIKE_ID.match(k) for k in resume)
    ):
        raise WaitNotOpen(
            f"resume names interrupts that are not pending: {sorted(resume)}; "
            f"pending: {sorted(by_interrupt)}"
        )
    if len(waits) == 1:
        return {waits[0].id: resume}
    raise WhichWait(
        "When there are multiple pending interrupts, you must specify the interrupt id "
        f"when resuming. Pending: {sorted(by_interrupt)}"
    )
