"""Signs of life from inside a node: ``heartbeat()`` and ``progress()``.

A long operation that produces nothing for a while (a tool waiting on a slow API, a big
computation) says it is alive, so its activity lease is renewed instead of expiring. The
signals travel on LangGraph's custom stream (``get_stream_writer``): the runtime turns
them into lease renewals and a bounded number of ``activity`` events; under plain
LangGraph they are ordinary custom stream chunks.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer

ACTIVITY_KEY = "outlast_activity"


def _emit(payload: dict[str, Any]) -> None:
    try:
        writer = get_stream_writer()
    except RuntimeError:  # called outside a graph run (a unit test, a notebook)
        return
    writer({ACTIVITY_KEY: payload})


def heartbeat(note: str | None = None) -> None:
    """Renew the current activity's lease: the operation is alive."""
    _emit({"signal": "heartbeat", "note": note})


def progress(message: str, fraction: float | None = None) -> None:
    """Report progress (``fraction`` in 0..1 when known); also renews the lease."""
    if fraction is not None and not 0.0 <= fraction <= 1.0:
        raise ValueError("fraction must be between 0 and 1")
    _emit({"signal": "progress", "note": message, "fraction": fraction})
