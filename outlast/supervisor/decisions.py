"""The supervisor's decisions about one run, as pure functions over typed state.

Nothing here touches the store, the event log or the graph: ``runtime/policy.py`` feeds
these functions what it read and acts on what they return, so every decision can be
checked in a plain unit test.

What the supervisor has to remember between attempts of a run (a tranche it granted, the
state it saw at the last budget checkpoint, a note for the next attempt) is a
``Supervision``: it outlives the worker that wrote it (a run released after a tranche is
claimed again, maybe elsewhere), so it is stored with the run, apart from the usage the
run's snapshot shows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from outlast.jsonable import to_jsonable
from outlast.supervisor.conversation import messages_of
from outlast.vocabulary import Verdict

# The trigger names in ``supervisor.verdict`` events.
ACTIVITY_EXPIRED = "activity_expired"
BUDGET_SOFT = "budget_soft"

# What the supervisor decides at a soft budget limit ("continue": grant a tranche).
SoftVerdict = Literal["continue", "change_strategy", "close", "escalate"]


@dataclass(frozen=True, slots=True)
class Supervision:
    """What the supervisor remembers about a run from one attempt to the next."""

    checkpoint_state: str | None = None  # fingerprint of the state at the last soft limit
    auto_tranches: int = 0  # tranches it granted on its own
    strategy_changed: bool = False  # it asked for another approach once already
    reminders: int = 0  # reminders it left after an expired activity lease
    note: str | None = None  # a supervisor message for the next attempt, not yet fed
    extended_for: float = 0.0  # seconds the model's extensions granted (``extension``)
    model_calls: int = 0  # calls to the supervisor's model, against the run's budget

    @classmethod
    def of(cls, data: dict[str, Any] | None) -> Supervision:
        data = data or {}
        return cls(
            checkpoint_state=data.get("checkpoint_state"),
            auto_tranches=int(data.get("auto_tranches") or 0),
            strategy_changed=bool(data.get("strategy_changed")),
            reminders=int(data.get("reminders") or 0),
            note=data.get("note"),
            extended_for=float(data.get("extended_for") or 0.0),
            model_calls=int(data.get("model_calls") or 0),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def fingerprint(values: Any) -> str:
    """The run's state, reduced to what tells whether it changed (progress)."""
    canonical = json.dumps(to_jsonable(values), sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SoftDecision:
    """The supervisor's answer at a soft limit. ``verdict`` None: it says nothing (the
    tranches reached the hard cap) and a person decides; ``raise_to`` is the new soft limit
    of a granted tranche; ``state`` is what to remember from now on."""

    verdict: SoftVerdict | None
    reason: str
    state: Supervision
    raise_to: float | None = None
    closed: dict[str, Any] | None = field(default=None)


def doubled(soft: float | None, hard: float | None) -> float | None:
    """The soft limit after one automatic tranche: twice as much, never past the hard cap;
    None when there is nothing left to grant."""
    if soft is None or (hard is not None and soft >= hard):
        return None
    return soft * 2 if hard is None else min(soft * 2, hard)


def at_soft_limit(
    memory: Supervision,
    *,
    dimension: str,
    limits: Mapping[str, Mapping[str, float | None]],
    values: Any,
    allowed: int,
    can_remind: bool,
) -> SoftDecision:
    """Within the ``allowed`` automatic tranches: another one only if the run made progress
    since the last checkpoint (its state changed), never past the hard cap. Without
    progress, once, ask a conversation for another approach (with one more tranche); after
    that, more budget buys nothing: close with the best result. Otherwise a person decides.
    """
    seen = fingerprint(values)
    progressed = memory.checkpoint_state != seen
    granted = memory.auto_tranches
    state = replace(memory, checkpoint_state=seen)
    soft, hard = limits[dimension].get("soft"), limits[dimension].get("hard")
    raised = doubled(soft, hard)
    if allowed and not progressed and can_remind and not memory.strategy_changed:
        note = (
            f"Supervisor: the run reached its soft limit of {dimension} without progress "
            "since the last checkpoint. Change strategy: try a different approach."
        )
        state = replace(state, strategy_changed=True, note=note)
        if raised is not None:
            state = replace(state, auto_tranches=granted + 1)
        return SoftDecision(
            "change_strategy",
            "no progress since the last checkpoint; asking for another approach",
            state,
            raise_to=raised,
        )
    if allowed and not progressed:
        closed = {
            "level": "soft",
            "dimension": dimension,
            "closed_by": "supervisor",
            "reason": "no progress since the last checkpoint",
        }
        return SoftDecision(
            "close",
            "no progress since the last checkpoint; closing with the best result",
            state,
            closed=closed,
        )
    if granted >= allowed or soft is None or soft <= 0:
        reason = f"{granted} of {allowed} automatic tranche(s) used; a person decides"
        return SoftDecision("escalate", reason, state)
    if raised is None:
        return SoftDecision(None, "the hard cap is reached", state)
    return SoftDecision(
        "continue",
        f"progress since the last checkpoint; tranche {granted + 1} of {allowed}",
        replace(state, auto_tranches=granted + 1),
        raise_to=raised,
    )


# Verdicts on an expired activity lease that stop the node in flight.
STOPPING: frozenset[Verdict] = frozenset({"close", "escalate", "remind", "change_strategy"})
# Verdicts that go on through a supervisor message in the conversation.
REMINDING: frozenset[Verdict] = frozenset({"remind", "change_strategy"})


def acted_verdict(verdict: Verdict, can_remind: bool) -> Verdict:
    """A reminder needs a conversation to go into; without one a person decides."""
    return "escalate" if verdict in REMINDING and not can_remind else verdict


@dataclass(frozen=True, slots=True)
class StopDecision:
    """The supervisor stopped the node in flight; what happens next depends on this."""

    verdict: Verdict
    activity: dict[str, Any]
    reason: str

    @property
    def name(self) -> str:
        return str(self.activity.get("name"))


def goal_of(values: Any) -> str:
    """What the run was asked to do: its first human message."""
    return next(
        (str(m.content) for m in messages_of(values) if getattr(m, "type", "") == "human"),
        "the task you were given",
    )


def reminder(decision: StopDecision, goal: str) -> str:
    silent = decision.activity.get("silent_for")
    stopped = f"Supervisor: {decision.name} went silent for {silent} s and was stopped. "
    if decision.verdict == "remind":
        return stopped + f"Remember the goal: {goal}. Keep to it and report progress."
    return stopped + f"Try a different approach to reach the goal: {goal}."
