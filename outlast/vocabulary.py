"""The words outlast's parts share: event types, run and wait statuses, wait kinds, verdicts.

One place so that the store, the runtime, the API and the terminal client cannot
disagree about a name: the Python code that imports these is held to them by mypy.
What spells the same words as literals instead (the SQL files: a ``CHECK`` constraint, a
CTE that appends an event; the web console's JavaScript) is held to this list by
``tests/test_vocabulary.py``, as is the terminal client's rendering of each event type.

The enums are ``StrEnum``s: a member *is* its string, so it compares equal to the value read
back from a row or a JSON body, and it serializes as that string.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


# A run in one of these never changes again.
TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})
# A run in one of these holds a worker's lease (``cancelling`` is only ever entered from
# ``running``).
LEASED = frozenset({RunStatus.RUNNING, RunStatus.CANCELLING})


class WaitStatus(StrEnum):
    OPEN = "open"
    ANSWERED = "answered"  # answered; the run has not resumed with the answer yet
    RESUMED = "resumed"  # the run took the answer
    WITHDRAWN = "withdrawn"  # the run ended before it took an answer


class DeliveryStatus(StrEnum):
    """A push notification in the outbox (``runtime/deliverer.py``)."""

    PENDING = "pending"  # due at next_at
    DELIVERING = "delivering"  # claimed; due again when the claim lapses (next_at)
    DELIVERED = "delivered"  # the receiver answered 2xx
    DEAD = "dead"  # retried for the whole retry period; retried again only by hand


class EffectStatus(StrEnum):
    """A side effect in the ledger (``runtime/effects.py``)."""

    STARTED = "started"  # committed before the call leaves the process
    DONE = "done"
    FAILED = "failed"  # the call raised: it may be called again
    UNKNOWN = "unknown"  # a crash left it unfinished: reconciled, never simply sent again


class WaitKind(StrEnum):
    HUMAN = "human"
    EXTERNAL = "external"
    TIMER = "timer"
    EVENT = "event"
    AUTH = "auth"
    BUDGET = "budget"
    RECONCILIATION = "reconciliation"


WAIT_KINDS = frozenset(WaitKind)
# Waits a client answers; the others (timer, external, event) end by themselves or by a
# signal. A run waiting on one of these is "interrupted" for LangGraph's clients.
ANSWERABLE_KINDS = frozenset(
    {WaitKind.HUMAN, WaitKind.AUTH, WaitKind.BUDGET, WaitKind.RECONCILIATION}
)


class EventType(StrEnum):
    """Every ``type`` an event in a run's log can have."""

    # The run's life (store transitions).
    RUN_CREATED = "run.created"
    RUN_QUEUED = "run.queued"
    RUN_STARTED = "run.started"
    RUN_WAITING = "run.waiting"
    RUN_RESUMED = "run.resumed"
    RUN_REQUEUED = "run.requeued"
    RUN_RELEASED = "run.released"
    RUN_CANCELLING = "run.cancelling"
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    # What the graph did.
    NODE_UPDATED = "node.updated"
    MESSAGE_DELTA = "message.delta"
    CUSTOM = "custom"
    # A LangGraph stream part kept for the LangGraph face (runtime/keeper.py,
    # runtime/events_mode.py).
    STREAM = "stream"
    # Waiting.
    WAIT_STARTED = "wait.started"
    WAIT_RENEWED = "wait.renewed"
    WAIT_ENDED = "wait.ended"
    WAIT_PROBE_FAILED = "wait.probe_failed"
    # The three clocks.
    ACTIVITY = "activity"
    SUPERVISOR_VERDICT = "supervisor.verdict"
    BUDGET_CHECKPOINT = "budget.checkpoint"
    # The effects ledger.
    EFFECT_STARTED = "effect.started"
    EFFECT_DONE = "effect.done"
    EFFECT_FAILED = "effect.failed"
    EFFECT_UNKNOWN = "effect.unknown"
    EFFECT_REPLAYED = "effect.replayed"
    EFFECT_COMPENSATED = "effect.compensated"  # the run ended; a done effect was undone


class WebhookEvent(StrEnum):
    """What a push subscription can ask for: the event types of the same names (the
    outbox trigger's WHEN, migration 0012, lists them too)."""

    RUN_WAITING = EventType.RUN_WAITING.value
    RUN_COMPLETED = EventType.RUN_COMPLETED.value
    RUN_FAILED = EventType.RUN_FAILED.value
    RUN_CANCELLED = EventType.RUN_CANCELLED.value
    SUPERVISOR_VERDICT = EventType.SUPERVISOR_VERDICT.value
    BUDGET_CHECKPOINT = EventType.BUDGET_CHECKPOINT.value


WEBHOOK_EVENTS = tuple(EventType(e.value) for e in WebhookEvent)

TERMINAL_EVENTS = frozenset(
    {EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED}
)


class Frame(StrEnum):
    """Frames a stream sends that are not events of the log (no seq of their own)."""

    GAP = "gap"  # the cursor is older than what retention kept
    SNAPSHOT = "snapshot"  # the run's current snapshot, sent right after a gap


# What the supervisor can decide about a run whose activity lease expired, or that
# reached a soft budget limit.
Verdict = Literal["renew", "close", "escalate", "remind", "change_strategy"]
VERDICTS: tuple[Verdict, ...] = ("renew", "close", "escalate", "remind", "change_strategy")


# How a sealed answer is stored (a wait's answer to an ``auth`` wait; ``secretbox``): the
# ciphertext, and a keyed digest that tells a retried answer from another one unopened.
SEALED = "sealed"
DIGEST = "digest"


def is_sealed(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {SEALED, DIGEST}
