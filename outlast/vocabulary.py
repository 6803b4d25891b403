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


class Takeover(StrEnum):
    """Which takeover a reaped run had (``takeover`` in the reaper's event): its worker's
    lease expired (a worker killed, starved past its lease, cut off) after the attempt
    saved a step since its claim, so the attempt is given back; or before, so it counts
    toward ``max_attempts`` (``store/transitions.py:reap``)."""

    PROGRESSED = "lease_expired_with_progress"
    STALLED = "lease_expired_without_progress"


# What each event type means, for a reader of the log: the documentation site's event
# reference is generated from this (docs/hooks/reference.py), and tests/test_docs.py fails
# when a type has no meaning here.
EVENT_MEANINGS: dict[EventType, str] = {
    EventType.RUN_CREATED: "the run was accepted (always seq 1): `graph`, `thread_id`",
    EventType.RUN_QUEUED: "the run is queued again without having been lost: a wait was "
    "answered, a timer came due, a signal or a probe ended its wait",
    EventType.RUN_STARTED: "a worker claimed the run and starts an attempt (`attempt`)",
    EventType.RUN_WAITING: "the run parked on one or more waits (`waits`, `kinds`) and holds "
    "no worker until one ends",
    EventType.RUN_RESUMED: "an attempt continues from the run's last checkpoint (after a "
    "crash, a drain or a wait) rather than from the input",
    EventType.RUN_REQUEUED: "the worker holding the run was lost (its lease expired): the run "
    "goes back to the queue and resumes from its last checkpoint; `takeover` says whether "
    "the lost attempt had saved a step since its claim (`lease_expired_with_progress`: "
    "the attempt is given back) or not (`lease_expired_without_progress`: it counts), "
    "`counted` whether it counts, `attempts` the attempts spent",
    EventType.RUN_RELEASED: "the worker gave the run back to the queue without failing it (a "
    "drain on SIGTERM, a tranche granted, a reminder); the attempt is not counted",
    EventType.RUN_CANCELLING: "a cancel reached a run that a worker holds (or one that owes "
    "compensations): it stops at the next step boundary, undoes what it owes, then ends",
    EventType.RUN_COMPLETED: "terminal: the graph finished (`partial: true` when a hard "
    "budget limit or a supervisor closed it with its best result)",
    EventType.RUN_FAILED: "terminal: the graph raised (`error`), or the run lost its worker "
    "on its last counted attempt, every counted one without saving a step: a poison pill "
    "(`reason`, `attempts`, `takeover`, `counted`; the run's error `worker_lost`)",
    EventType.RUN_CANCELLED: "terminal: the run was cancelled (`reason`), after undoing the "
    "effects it owed",
    EventType.NODE_UPDATED: "a node task finished: its name, namespace and state update, "
    "once per task",
    EventType.MESSAGE_DELTA: "model output streamed by a node, coalesced per "
    "`OUTLAST_MESSAGE_FLUSH_INTERVAL` (`epoch` and `n`: the numbers of the chunks it holds, "
    "which a stream of the LangGraph face may have sent live already)",
    EventType.CUSTOM: "what a node wrote with LangGraph's stream writer (`data`, `ns`)",
    EventType.STREAM: "a LangGraph stream part kept for the LangGraph face (the modes only it "
    "serves: `tasks`, `checkpoints`, `debug`, `events`, …)",
    EventType.WAIT_STARTED: "the run opened a wait (`wait`: id, kind, object, prompt, schema, "
    "deadline; `interrupt`: the id and value of the interrupt it stands for)",
    EventType.WAIT_RENEWED: "the probe of an external wait answered that the job is alive: "
    "the wait's lease is renewed (`renewals`, `detail`)",
    EventType.WAIT_ENDED: "a wait ended (`how`: input, signal, timer, deadline, probe, "
    "probe_failed), with the answer (`(redacted)` for an auth wait)",
    EventType.WAIT_PROBE_FAILED: "the probe of an external wait raised or timed out; it is "
    "tried again at its next interval, and its last allowed failure ends the wait "
    "(`failures`, `error`)",
    EventType.ACTIVITY: "what the run does now: the node or call in flight, its activity "
    "lease, renewals and health (live, silent, stalled); written at most once per "
    "`OUTLAST_ACTIVITY_FLUSH_INTERVAL`",
    EventType.SUPERVISOR_VERDICT: "the supervisor decided about an expired activity lease or "
    "a budget checkpoint (`trigger`, `tier`, `verdict`, `reason`, `cost`; `evidence` and "
    "`lease_for` on a renewal, `evidence: extension` when the model's bounded extension "
    "granted it, `advice` when a model was asked)",
    EventType.BUDGET_CHECKPOINT: "the run reached a budget limit (`level` soft or hard, "
    "`dimension`, `used`, `limit`, `usage`) and stops at the step boundary",
    EventType.EFFECT_STARTED: "a declared effect is about to be called; recorded before the "
    "call leaves the process",
    EventType.EFFECT_DONE: "a declared effect returned; its result is recorded",
    EventType.EFFECT_FAILED: "a declared effect (or a compensation) raised; it may be called again",
    EventType.EFFECT_UNKNOWN: "an effect was found unfinished after a crash: it is reconciled "
    "(its `reconcile`, or a person asked), never simply called again",
    EventType.EFFECT_REPLAYED: "a node ran again and an effect already done returned its "
    "recorded result without being called",
    EventType.EFFECT_COMPENSATED: "the run is ending cancelled or failed and a done effect was "
    "undone by its compensation (or a person said it was undone by hand)",
}


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


FRAME_MEANINGS: dict[Frame, str] = {
    Frame.GAP: "the cursor is older than what retention kept (`requested_after`, "
    "`oldest_available`); a `snapshot` follows",
    Frame.SNAPSHOT: "the run's current snapshot, sent right after a `gap`",
}


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
