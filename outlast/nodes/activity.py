"""Signs of life from inside a node: ``heartbeat()`` and ``progress()``.

A long operation that produces nothing for a while (a tool waiting on a slow API, a big
computation) says it is alive, so its activity lease is renewed instead of expiring. The
signals travel on LangGraph's custom stream (``get_stream_writer``): the runtime turns
them into lease renewals and a bounded number of ``activity`` events; under plain
LangGraph they are ordinary custom stream chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.config import get_stream_writer

ACTIVITY_KEY = "outlast_activity"


def _emit(payload: dict[str, Any]) -> None:
    try:
        writer = get_stream_writer()
    except (RuntimeError, KeyError):
        # Outside a graph run: no config at all (a unit test), or a LangChain config
        # without LangGraph's runtime (a tool called with ``.ainvoke`` in a notebook).
        return
    writer({ACTIVITY_KEY: payload})


def heartbeat(
    note: str | None = None,
    probe: Callable[[], Any] | str | None = None,
    expected: float | None = None,
) -> None:
    """Renew the current activity's lease: the operation is alive.

    ``probe`` (a module-level function, or ``"module:function"``) lets the supervisor ask
    later whether the operation is still alive when it has gone quiet: it returns
    ``"alive"`` / ``"running"``, or ``"done"`` / ``"failed"``, or a dict with ``status``
    and, when the job knows it, ``progress`` (0..1): a rising progress is what lets a
    silent job be renewed past the renewal cap.

    ``expected``: how long, in seconds from its start, the operation is expected to take
    (a batch job the provider quotes at ten minutes). Until then its silence is expected
    and costs no renewal; after it, the usual ladder."""
    if expected is not None and not expected > 0:
        raise ValueError("expected must be a positive number of seconds")
    _emit({"signal": "heartbeat", "note": note, "probe": _path(probe), "expected": expected})


def _path(probe: Callable[[], Any] | str | None) -> str | None:
    if probe is None or isinstance(probe, str):
        return probe
    module = getattr(probe, "__module__", None)
    name = getattr(probe, "__qualname__", "")
    if not module or "<" in name:
        raise ValueError("a probe must be a module-level function")
    return f"{module}:{name}"


def progress(message: str, fraction: float | None = None) -> None:
    """Report progress (``fraction`` in 0..1 when known); also renews the lease."""
    if fraction is not None and not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction must be between 0 and 1")
    _emit({"signal": "progress", "note": message, "fraction": fraction})
