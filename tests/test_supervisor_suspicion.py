"""The model's early look before the renewal cap (issue 33, ``supervisor/suspicion.py``):
a doubt paces the looks one lease apart until progress, and does nothing else."""

from __future__ import annotations

import datetime as dt
from typing import Any

from langchain_core.language_models import FakeListChatModel

from outlast.runtime.looks import Activity
from outlast.supervisor import evidence as ev
from outlast.supervisor.ladder import supervisor
from tests.util import expired_look

# Silent, no probe, two blind renewals granted: the third (the last before the cap)
# would last 8 leases.
SILENT = expired_look(
    {"name": "fetch", "elapsed": 300.0, "note": "retrying page 4 (attempt 12)"},
    renewals_granted=2,
    early_look_from=2,
    quoted="retrying page 4 (attempt 12)",
)
CLOSE = '{"verdict": "close", "reason": "the same page again and again"}'
EXTEND = '{"verdict": "extend", "seconds": 600, "reason": "waits for the reset"}'


class Counting(FakeListChatModel):
    """A fake model that counts the questions it answers."""

    asked: int = 0

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        self.asked += 1
        return await super().ainvoke(*args, **kwargs)


def _model(answer: str) -> Counting:
    return Counting(responses=[answer] * 10)


async def _look(model: Counting, **state: Any) -> dict[str, Any]:
    config = {"configurable": {"supervisor_model": model}}
    result: dict[str, Any] = await supervisor.ainvoke({**SILENT, **state}, config)  # type: ignore[arg-type]
    return result


async def test_a_doubt_makes_the_last_renewal_one_lease_instead_of_eight() -> None:
    model = _model(CLOSE)
    doubted = await _look(model)
    # still the evidence's renewal, counted: no close, no person, on the model's word
    assert (doubted["verdict"], doubted["evidence"], doubted["tier"]) == ("renew", ev.SILENCE, 4)
    assert doubted["lease_for"] == 30.0 and doubted["doubted"] == "close"
    assert doubted["advice"]["verdict"] == "close" and model.asked == 1
    assert "renewal 3 of 3" in doubted["reason"] and "doubts it (close)" in doubted["reason"]
    without = await _look(_model(CLOSE), early_look_from=0)
    assert without["lease_for"] == 240.0 and "doubted" not in without


async def test_an_answer_that_does_not_doubt_leaves_the_renewal_as_it_was() -> None:
    kept = await _look(_model(EXTEND))
    assert (kept["verdict"], kept["lease_for"]) == ("renew", 240.0)
    assert "doubted" not in kept and kept["advice"]["verdict"] == "extend"


async def test_the_model_is_not_asked_too_early_without_words_or_twice() -> None:
    for state in (
        {"renewals_granted": 1},  # before the early look's renewal
        {"activity": {"name": "fetch", "elapsed": 300.0}, "quoted": None},  # nothing to read
        {"doubted": "close"},  # asked once per stall: the doubt stands
    ):
        model = _model(CLOSE)
        result = await _look(model, **state)
        assert model.asked == 0, state
        assert result["verdict"] == "renew"
    # the standing doubt keeps the looks one lease apart, without a call
    assert (await _look(_model(CLOSE), doubted="close"))["lease_for"] == 30.0


async def test_past_the_cap_a_probe_verdict_buys_one_lease_from_the_extensions() -> None:
    probed = await _look(_model('{"verdict": "probe"}'), renewals_granted=3)
    assert (probed["verdict"], probed["evidence"], probed["lease_for"]) == (
        "renew",
        ev.EXTENSION,
        30.0,
    )
    spent = await _look(_model('{"verdict": "probe"}'), renewals_granted=3, extensions=3)
    assert spent["verdict"] == "escalate"


def test_an_activity_keeps_the_doubt_until_progress() -> None:
    wall = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    act = Activity.begin("tool", "fetch", wall, 0.0)
    act.settle(
        {"verdict": "renew", "evidence": ev.SILENCE, "lease_for": 30.0, "doubted": "probe"},
        30.0,
        30.0,
    )
    assert act.look(60.0)["doubted"] == "probe"
    act.settle({"verdict": "renew", "evidence": ev.SILENCE, "lease_for": 30.0}, 60.0, 30.0)
    assert act.look(90.0)["doubted"] == "probe"
    act.settle({"verdict": "renew", "evidence": ev.PROGRESS, "lease_for": 30.0}, 90.0, 30.0)
    assert act.look(120.0)["doubted"] is None


async def test_at_the_cap_a_standing_doubt_is_the_answer_without_a_call() -> None:
    """No extension for an operation the model doubted, and no second call: its doubt
    goes to the person as advice, or words the reminder."""
    model = _model(EXTEND)
    escalated = await _look(model, renewals_granted=3, doubted="close")
    assert model.asked == 0
    assert (escalated["verdict"], escalated["tier"]) == ("escalate", 4)
    assert "advised close" in escalated["reason"]
    reminded = await _look(model, renewals_granted=3, doubted="change_strategy", can_remind=True)
    assert (reminded["verdict"], reminded["tier"], model.asked) == ("change_strategy", 3, 0)
    # without the doubt the same model extends it
    assert (await _look(model, renewals_granted=3))["evidence"] == ev.EXTENSION
