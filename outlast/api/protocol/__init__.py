"""LangGraph's thread protocol v2 (the agent-protocol's streaming spec): a face that only
translates. Commands (``POST /threads/{t}/commands`` and WebSocket frames) go to the run
service; the thread's events are read from the durable run logs and translated on the way
out, so a cursor means the same thing in every process and after every restart."""

from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """The protocol's routes: its commands, and a thread's event stream (SSE and the
    WebSocket), after the LangGraph face's (whose paths they extend)."""
    from outlast.api.protocol import commands, socket, stream

    for module in (commands, stream, socket):
        app.include_router(module.router)
