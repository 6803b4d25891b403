"""Nodes and node helpers. No SQL, no HTTP: they only talk to LangGraph."""

from outlast.nodes.activity import heartbeat, progress
from outlast.nodes.waits import (
    ExternalWaitFailed,
    ProbeResult,
    require_auth,
    sleep_for,
    sleep_until,
    wait_external,
    wait_for_event,
    wait_for_human,
)

__all__ = [
    "ExternalWaitFailed",
    "ProbeResult",
    "heartbeat",
    "progress",
    "require_auth",
    "sleep_for",
    "sleep_until",
    "wait_external",
    "wait_for_event",
    "wait_for_human",
]
