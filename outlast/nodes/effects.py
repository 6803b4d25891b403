"""Side effects a checkpoint cannot undo: declare them, and the ledger remembers them.

``@effect(idempotent=...)`` wraps an async function (a tool's body) that touches the
outside world. Under outlast every call is recorded in the run's effects ledger, keyed by
what stays the same when the node runs again (run, node path, task path, step, and the
tool call id or the call's position in the node), so a node re-run after a crash, a retry
or a resumed interrupt returns the recorded result instead of sending the email again.
The wrapped function receives ``idempotency_key``, to hand to a provider that supports one.

``compensate=fn`` names what undoes it: when the run ends ``cancelled`` or ``failed`` (or
the LangGraph face rolls it back), ``fn(result, *args, idempotency_key=..., **kwargs)``
is called for each of its done calls, latest first, with the call's recorded result and
arguments (as stored: JSON), each undoing an effect of its own in the ledger
(``runtime/compensation.py``). It must be idempotent under its key (a crash may call it
again with the same one), and a module-level function: the ledger keeps its import path,
because the worker that compensates may not be the one that made the call.

Without outlast (plain LangGraph, a notebook) the function is simply called, with a key
derived from its arguments.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from langgraph.config import get_config

LEDGER_KEY = "__outlast_ledger"
T = TypeVar("T")

# One counter per node execution: LangGraph runs each task in its own asyncio task, which
# starts from a copy of the loop's context where this is unset.
_calls: ContextVar[dict[str, int] | None] = ContextVar("outlast_effect_calls", default=None)

Reconcile = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Ledger(Protocol):
    async def run_effect(
        self,
        *,
        key: str,
        tool: str,
        args: dict[str, Any],
        idempotent: bool,
        call: Callable[[str], Awaitable[Any]],
        reconcile: Reconcile | None,
        compensate: str | None = None,
    ) -> Any: ...


class NotImportable(TypeError):
    """``compensate=`` got something a worker could not import by name."""


def import_path(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a module-level function, or NotImportable saying why."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not callable(fn) or not module or not qualname or "<" in qualname:
        raise NotImportable(
            f"compensate= needs a function defined at the top level of a module, not "
            f"{fn!r}: the worker that compensates imports it by name"
        )
    return f"{module}:{qualname}"


def _config() -> Any:
    try:
        return get_config()
    except RuntimeError:
        return None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def effect_key(config: Any, tool: str, tool_call_id: str | None) -> str:
    """Stable across re-executions of the same node attempt; never a task UUID."""
    meta = config.get("metadata", {}) or {}
    ns = str(config.get("configurable", {}).get("checkpoint_ns", ""))
    names = "|".join(part.split(":")[0] for part in ns.split("|") if part)
    if tool_call_id:
        ident = f"call:{tool_call_id}"
    else:
        calls = _calls.get()
        if calls is None:
            calls = {}
            _calls.set(calls)
        position = calls.get(tool, 0)
        calls[tool] = position + 1
        ident = f"n:{position}"
    raw = "|".join(
        str(x)
        for x in (
            meta.get("run_id"),
            names,
            meta.get("langgraph_path"),
            meta.get("langgraph_step"),
            tool,
            ident,
        )
    )
    return f"{tool}:{_digest(raw)}"


def effect(
    *,
    idempotent: bool,
    reconcile: Reconcile | None = None,
    name: str | None = None,
    compensate: Callable[..., Any] | None = None,
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Declare a side effect. ``idempotent``: calling it twice with the same key is safe.
    ``reconcile(key, args)`` answers whether an unfinished call happened: ``("done",
    result)`` or ``"not_done"``; without it an unfinished non-idempotent call puts the run
    in a ``reconciliation`` wait for a person. ``compensate``: what undoes a done call if
    the run ends cancelled or failed (see the module's docstring)."""
    undo = import_path(compensate) if compensate is not None else None

    def decorate(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        tool = name or fn.__name__

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> T:
            payload = {"args": list(args), "kwargs": kwargs}
            config = _config()
            ledger = (config or {}).get("configurable", {}).get(LEDGER_KEY)
            if ledger is None:
                canonical = json.dumps(payload, sort_keys=True, default=str)
                return await fn(*args, idempotency_key=f"{tool}:{_digest(canonical)}", **kwargs)
            key = effect_key(config, tool, kwargs.get("tool_call_id"))
            result: T = await ledger.run_effect(
                key=key,
                tool=tool,
                args=payload,
                idempotent=idempotent,
                call=lambda k: fn(*args, idempotency_key=k, **kwargs),
                reconcile=reconcile,
                compensate=undo,
            )
            return result

        # The key is supplied here, never by a caller or a model: hide it from the
        # signature, so a LangChain tool built from this function (``@tool``) does not put
        # it in the schema the model sees.
        # Annotations are resolved against the function's own module (they may be strings
        # under `from __future__ import annotations`), since the wrapper lives here.
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception:
            hints = {}
        signature = inspect.signature(fn)
        params = [
            p.replace(annotation=hints.get(n, p.annotation))
            for n, p in signature.parameters.items()
            if n != "idempotency_key"
        ]
        wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=params, return_annotation=hints.get("return", signature.return_annotation)
        )
        wrapper.__annotations__ = {n: h for n, h in hints.items() if n != "idempotency_key"}
        del wrapper.__wrapped__
        return wrapper

    return decorate
