"""Wait nodes: a run asks for something and stops holding anything while it waits.

Each helper calls LangGraph's ``interrupt()`` with a typed payload under the key
``outlast_wait``; the runtime turns the pending interrupt into a first-class wait (status
``waiting``, ``wait = {id, kind, object, since, …}``) and releases the worker. The run
is a row and a checkpoint until the answer, the timer, the signal or the probe's result
arrives; then LangGraph re-runs the node from its start and ``interrupt()`` returns the
value. Work done before the call happens again on resume, so keep these calls at the
start of a node (or make the earlier work idempotent).

These helpers work in any LangGraph graph. Without outlast (plain LangGraph, LangGraph
Studio), they are ordinary interrupts whose payload says what is awaited.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.types import interrupt

WAIT_KEY = "outlast_wait"
_MISSING: Any = object()


class ExternalWaitFailed(RuntimeError):
    """The external job could not be followed (repeated probe failures) or reported failure."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a probe says about an external job: not done yet (``done=False``, an optional
    ``detail`` such as progress), done with a ``result``, or ``failed`` with a reason."""

    done: bool
    result: Any = None
    detail: Any = None
    failed: bool = False


def _deadline(timeout: float | None, default: Any) -> dict[str, Any]:
    """A wait with a deadline takes its default answer when the time is up; a deadline
    without a default would leave the node nothing to return, so both go together."""
    if timeout is None:
        return {}
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if default is _MISSING:
        raise ValueError("a timeout needs a default answer (default=...)")
    return {"timeout": float(timeout), "has_default": True, "default": default}


def _wait(kind: str, schema: dict[str, Any] | type | None = None, **fields: Any) -> Any:
    return interrupt({WAIT_KEY: {"kind": kind, **fields}}, response_schema=schema)


def wait_for_human(
    question: Any,
    schema: dict[str, Any] | type | None = None,
    *,
    timeout: float | None = None,
    default: Any = _MISSING,
) -> Any:
    """Ask a person; returns the answer (validated against ``schema``, a JSON schema or a
    pydantic model / TypedDict). With ``timeout`` (seconds) and ``default``, the default
    answer is taken when nobody answers in time."""
    return _wait("human", schema, prompt=question, **_deadline(timeout, default))


def require_auth(scope: str, *, prompt: str | None = None) -> Any:
    """Wait for credentials for ``scope`` (a person or an operator supplies them) and
    return them. Under outlast the answer is stored sealed and the checkpoint holds only a
    reference to it; prefer ``credential(name)`` in tools, which asks only when needed."""
    from outlast.nodes.credentials import answered

    return answered(
        _wait(
            "auth",
            None,
            object={"scope": scope},
            prompt=prompt or f"credentials needed for {scope}",
        )
    )


def sleep_until(when: dt.datetime | str) -> str:
    """Sleep until ``when`` (an aware datetime or ISO 8601 string), on database time;
    survives restarts of every process. Returns the wake-up time (ISO 8601)."""
    at = dt.datetime.fromisoformat(when) if isinstance(when, str) else when
    if at.tzinfo is None:
        raise ValueError("sleep_until needs an aware datetime (with a time zone)")
    answer = _wait("timer", None, object={"until": at.isoformat()}, until=at.isoformat())
    return str(answer.get("woke_at", at.isoformat())) if isinstance(answer, dict) else str(answer)


def sleep_for(seconds: float) -> str:
    """Sleep for ``seconds`` from the first time this node reached this call. On resume the
    node re-runs and this returns the recorded wake-up at once."""
    return sleep_until(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds))


def wait_for_event(
    key: str | list[str], *, timeout: float | None = None, default: Any = _MISSING
) -> Any:
    """Wait for ``POST /v1/signals/{key}`` (any of several keys: the first one wins).
    Returns ``{"key", "payload"}``; with ``timeout`` and ``default``, the default."""
    keys = [key] if isinstance(key, str) else list(key)
    if not keys:
        raise ValueError("wait_for_event needs at least one key")
    return _wait("event", None, object={"keys": keys}, keys=keys, **_deadline(timeout, default))


def _probe_path(probe: str | Callable[..., Any]) -> str:
    if isinstance(probe, str):
        if ":" not in probe:
            raise ValueError("probe must be a callable or 'module:function'")
        return probe
    module = inspect.getmodule(probe)
    name = getattr(probe, "__qualname__", "")
    if module is None or "<" in name:
        raise ValueError("probe must be a module-level function so a worker can import it")
    return f"{module.__name__}:{name}"


def wait_external(
    provider: str,
    job_id: str,
    probe: str | Callable[..., Any],
    every: float = 10.0,
    *,
    max_failures: int = 3,
) -> Any:
    """Wait for a job at an external provider. The run is parked; a worker calls
    ``probe(job_id)`` every ``every`` seconds (an async or plain function returning a
    ``ProbeResult`` or a dict with the same fields). Each answer renews the wait's lease;
    ``done`` resumes the run with the result; ``max_failures`` failures in a row, or
    ``failed``, raise ``ExternalWaitFailed`` here."""
    if every <= 0:
        raise ValueError("every must be positive")
    answer = _wait(
        "external",
        None,
        object={"provider": provider, "job_id": job_id},
        prompt=f"waiting for {provider} job {job_id}",
        probe={
            "path": _probe_path(probe),
            "every": float(every),
            "max_failures": int(max_failures),
            "job_id": job_id,
        },
    )
    if isinstance(answer, dict) and answer.get("status") == "failed":
        raise ExternalWaitFailed(str(answer.get("reason", "external job failed")))
    return answer.get("result") if isinstance(answer, dict) else answer
