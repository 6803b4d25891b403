"""What a graph's nodes call: waits, signs of life, credentials and (``outlast.nodes.effects``)
declared side effects. No SQL, no HTTP: they only talk to LangGraph (the effects ledger
and the credentials come through the run's config), so the same graph runs under plain
LangGraph too."""

from outlast.nodes.activity import heartbeat, progress
from outlast.nodes.credentials import (
    Credential,
    CredentialExpired,
    CredentialMissing,
    CredentialNeeded,
    credential,
    credential_sync,
)
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
    "Credential",
    "CredentialExpired",
    "CredentialMissing",
    "CredentialNeeded",
    "ExternalWaitFailed",
    "ProbeResult",
    "credential",
    "credential_sync",
    "heartbeat",
    "progress",
    "require_auth",
    "sleep_for",
    "sleep_until",
    "wait_external",
    "wait_for_event",
    "wait_for_human",
]
