"""What a graph's nodes call: waits, signs of life, and (``outlast.nodes.effects``)
declared side effects. No SQL, no HTTP: they only talk to LangGraph (the effects ledger
comes through the run's config), so the same graph runs under plain LangGraph too."""

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
