"""The supervisor's and the budget policy's pure decisions, without a server."""

from __future__ import annotations

import datetime as dt
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage

from outlast.runtime.policy import Answer, read_answer
from outlast.store import Wait
from outlast.supervisor.decisions import (
    StopDecision,
    Supervision,
    acted_verdict,
    at_soft_limit,
    fingerprint,
    goal_of,
    reminder,
)

LIMITS = {"steps": {"soft": 3.0, "hard": 20.0}}


def _soft(
    memory: Supervision,
    values: Any,
    *,
    allowed: int = 2,
    can_remind: bool = False,
    limits: dict[str, dict[str, float | None]] | None = None,
) -> Any:
    return at_soft_limit(
        memory,
        dimension="steps",
        limits=limits or LIMITS,
        values=values,
        allowed=allowed,
        can_remind=can_remind,
    )


def test_supervision_survives_its_json_and_reads_what_earlier_versions_wrote() -> None:
    memory = Supervision("abc", 2, True, 1, "try again")
    assert Supervision.of(memory.to_json()) == memory
    assert Supervision.of(None) == Supervision()
    assert Supervision.of({"auto_tranches": 1}).auto_tranches == 1


def test_with_progress_a_tranche_doubles_the_soft_limit_until_the_allowance_is_spent() -> None:
    first = _soft(Supervision(), {"n": 3})
    assert (first.verdict, first.raise_to) == ("continue", 6.0)
    assert first.state.auto_tranches == 1 and first.state.checkpoint_state == fingerprint({"n": 3})
    second = _soft(first.state, {"n": 6}, limits={"steps": {"soft": 6.0, "hard": 20.0}})
    assert (second.verdict, second.raise_to, second.state.auto_tranches) == ("continue", 12.0, 2)
    spent = _soft(second.state, {"n": 12}, limits={"steps": {"soft": 12.0, "hard": 20.0}})
    assert (spent.verdict, spent.raise_to) == ("escalate", None)
    assert spent.state.auto_tranches == 2


def test_without_an_allowance_a_person_decides() -> None:
    decision = _soft(Supervision(), {"n": 3}, allowed=0)
    assert (decision.verdict, decision.raise_to, decision.closed) == ("escalate", None, None)


def test_at_the_hard_cap_the_supervisor_grants_nothing_and_says_nothing() -> None:
    decision = _soft(Supervision(), {"n": 1}, limits={"steps": {"soft": 20.0, "hard": 20.0}})
    assert decision.verdict is None and decision.raise_to is None


def test_without_progress_a_conversation_is_asked_once_for_another_approach() -> None:
    seen = Supervision(checkpoint_state=fingerprint({"n": 3}), auto_tranches=1)
    asked = _soft(seen, {"n": 3}, can_remind=True)
    assert (asked.verdict, asked.raise_to) == ("change_strategy", 6.0)
    assert asked.state.strategy_changed and asked.state.note and asked.state.auto_tranches == 2
    again = _soft(asked.state, {"n": 3}, can_remind=True)
    assert again.verdict == "close" and again.closed is not None
    assert again.closed["closed_by"] == "supervisor" and again.closed["level"] == "soft"


def test_without_progress_or_a_conversation_the_run_closes_with_its_best_result() -> None:
    seen = Supervision(checkpoint_state=fingerprint({"n": 3}))
    decision = _soft(seen, {"n": 3}, can_remind=False)
    assert decision.verdict == "close" and decision.raise_to is None


def test_a_reminder_needs_a_conversation() -> None:
    assert acted_verdict("remind", can_remind=False) == "escalate"
    assert acted_verdict("change_strategy", can_remind=False) == "escalate"
    assert acted_verdict("remind", can_remind=True) == "remind"
    assert acted_verdict("renew", can_remind=False) == "renew"


def test_the_reminder_quotes_the_goal_from_the_first_human_message() -> None:
    values = {"messages": [AIMessage("hello"), HumanMessage("find the bug"), HumanMessage("x")]}
    assert goal_of(values) == "find the bug"
    assert goal_of({}) == "the task you were given"
    stop = StopDecision("remind", {"name": "tools", "silent_for": 4.5}, "silent")
    assert "tools went silent for 4.5 s" in reminder(stop, "find the bug")
    assert "Remember the goal: find the bug" in reminder(stop, "find the bug")
    other = StopDecision("change_strategy", {"name": "tools", "silent_for": 1}, "")
    assert "different approach" in reminder(other, "g")


def _wait(interrupt_id: str, kind: str, answer: Any, obj: Any = None) -> Wait:
    now = dt.datetime.now(dt.UTC)
    return Wait(
        id="w1", run_id="r1", interrupt_id=interrupt_id, kind=kind, status="answered",
        object=obj, prompt=None, schema=None, event_keys=None, has_default=False,
        default=None, probe=None, answer=answer, answered_how="input", since=now,
        last_signal_at=None, lease_expires_at=None, wake_at=None, renewals=0, failures=0,
        answered_at=now,
    )  # fmt: skip


def test_a_persons_answer_at_a_budget_checkpoint() -> None:
    limits = {"steps": {"soft": 3.0, "hard": 10.0}}
    more = {"action": "continue", "tranche": 4}
    tranche = read_answer(_wait("budget:steps:1", "budget", more, {"dimension": "steps"}), limits)
    assert tranche == Answer(limits={"steps": {"soft": 7.0, "hard": 10.0}})
    close = read_answer(
        _wait("budget:steps:1", "budget", {"action": "close"}, {"dimension": "steps"}), limits
    )
    assert close is not None and close.closed == {
        "level": "soft",
        "dimension": "steps",
        "closed_by": "a person",
    }
    assert read_answer(_wait("ask", "human", "yes"), limits) is None  # the graph's own


def test_a_persons_answer_after_a_supervisor_escalation() -> None:
    limits = {"steps": {"soft": 3.0, "hard": 10.0}}
    retry = read_answer(_wait("supervisor:1", "human", "retry", {"activity": "n"}), limits)
    assert retry == Answer(limits=limits)  # consumed, nothing raised
    close = read_answer(_wait("supervisor:1", "human", "close", {"activity": "n"}), limits)
    assert close is not None and close.closed == {
        "closed_by": "a person",
        "after": "supervisor escalation",
        "activity": "n",
    }
