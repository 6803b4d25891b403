"""The model's bounded extension past the renewal cap (issue 33): what it grants, and the
bounds that hold whatever the model asks for (``supervisor/extension.py``)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.language_models import FakeListChatModel

from outlast.config import Settings
from outlast.runtime.looks import Activity
from outlast.runtime.policy import RunPolicy
from outlast.supervisor import evidence as ev
from outlast.supervisor.extension import Bounds
from outlast.supervisor.ladder import supervisor
from outlast.vocabulary import EventType
from tests.util import RecordingSink, SupervisionStore, expired_look

# Past the cap, silent, no conversation: before issue 33 a person was asked at once.
PAST = expired_look({"name": "fetch", "elapsed": 600.0, "note": "rate limit, resets at 14:20"})
EXTEND_10_MIN = '{"verdict": "extend", "seconds": 600, "reason": "waits for the reset"}'
EXTEND_A_DAY = '{"verdict": "extend", "seconds": 86400, "reason": "as the note asks"}'


# The bounds these tests count against, whatever the settings' defaults are.
BOUNDS = {"longest": 1200.0, "count": 3, "per_operation": 3600.0, "per_run": 7200.0}


def _fake(answer: str) -> FakeListChatModel:
    return FakeListChatModel(responses=[answer] * 10)


async def _ask(answer: str, **state: Any) -> dict[str, Any]:
    config = {"configurable": {"supervisor_model": _fake(answer)}}
    question = {**PAST, "extension_bounds": BOUNDS, **state}
    result: dict[str, Any] = await supervisor.ainvoke(question, config)  # type: ignore[arg-type]
    return result


def _refused(result: dict[str, Any]) -> bool:
    """What the ladder did before it could extend: a person decides."""
    return (result["tier"], result["verdict"]) == (4, "escalate")


async def test_past_the_cap_an_extend_buys_the_time_it_asks_for() -> None:
    granted = await _ask(EXTEND_10_MIN)
    assert (granted["tier"], granted["verdict"], granted["evidence"]) == (3, "renew", "extension")
    assert granted["lease_for"] == 600.0
    assert granted["cost"]["model_calls"] == 1
    advice = {"verdict": "extend", "reason": "waits for the reset", "seconds": 600}
    assert granted["advice"] == advice
    assert "extension 1 of 3" in granted["reason"]


async def test_an_extension_longer_than_the_longest_is_clipped() -> None:
    clipped = await _ask(EXTEND_A_DAY)
    assert clipped["lease_for"] == BOUNDS["longest"] == 1200.0
    assert "clipped from 86400 s" in clipped["reason"]
    # a renew says "not yet" without a length: the longest one extension lasts
    renewed = await _ask('{"verdict": "renew"}')
    assert (renewed["evidence"], renewed["lease_for"]) == ("extension", 1200.0)


async def test_the_extension_after_the_last_allowed_is_refused_as_before() -> None:
    last = await _ask(EXTEND_10_MIN, extensions=2, extended_for=1200.0)
    assert last["evidence"] == "extension" and "extension 3 of 3" in last["reason"]
    refused = await _ask(EXTEND_10_MIN, extensions=3, extended_for=1800.0)
    assert _refused(refused)
    assert (refused.get("cost") or {}).get("model_calls", 0) == 0  # its answer could not act
    # in a conversation the model is still asked for the reminder, and its extend is advice
    reminded = await _ask(EXTEND_10_MIN, extensions=3, can_remind=True)
    assert (reminded["tier"], reminded["verdict"]) == (4, "remind")
    assert reminded["advice"]["verdict"] == "extend" and "advised extend" in reminded["reason"]


async def test_the_per_operation_total_clips_then_refuses() -> None:
    clipped = await _ask(EXTEND_A_DAY, extensions=1, extended_for=3000.0)
    assert clipped["lease_for"] == 600.0  # 3000 + 600 = the hour one operation may get
    assert _refused(await _ask(EXTEND_A_DAY, extensions=2, extended_for=3600.0))


async def test_the_per_run_total_clips_then_refuses() -> None:
    clipped = await _ask(EXTEND_A_DAY, run_extended_for=7000.0)
    assert clipped["lease_for"] == 200.0 and "7200 of 7200 s for the run" in clipped["reason"]
    assert _refused(await _ask(EXTEND_A_DAY, run_extended_for=7200.0))


async def test_other_verdicts_past_the_cap_act_as_before() -> None:
    for said in ("close", "escalate", "remind", "change_strategy"):
        result = await _ask(f'{{"verdict": "{said}"}}')
        assert _refused(result), said  # no conversation: a close still needs corroboration
        assert result["advice"]["verdict"] == said
    # an ask past what the schema allows is no answer at all
    assert _refused(await _ask('{"verdict": "extend", "seconds": 100000000}'))
    assert _refused(await _ask('{"verdict": "extend", "seconds": -5}'))


async def test_under_the_cap_the_model_is_not_asked() -> None:
    result = await _ask(EXTEND_A_DAY, renewals_granted=0)
    assert (result["tier"], result["evidence"]) == (4, "silence")


def test_the_bounds_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Bounds.of_settings(Settings()) == Bounds() == Bounds.of({})
    monkeypatch.setenv("OUTLAST_SUPERVISOR_EXTENSION_COUNT", "0")
    assert Bounds.of_settings(Settings()).count == 0


async def test_bounds_set_to_nothing_let_the_model_extend_nothing() -> None:
    assert _refused(await _ask(EXTEND_10_MIN, extension_bounds={"count": 0}))


def test_an_activity_counts_its_extensions_and_progress_does_not_reset_them() -> None:
    act = Activity.begin("tool", "fetch", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 0.0)
    act.settle({"verdict": "renew", "evidence": ev.EXTENSION, "lease_for": 600.0}, 100.0, 30.0)
    assert (act.extensions, act.extended_for, act.granted_until) == (1, 600.0, 700.0)
    act.settle({"verdict": "renew", "evidence": ev.PROGRESS, "lease_for": 30.0}, 700.0, 30.0)
    look = act.look(730.0)
    assert (look["extensions"], look["extended_for"]) == (1, 600.0)


async def test_the_run_keeps_its_extensions_and_logs_each_with_its_reason_and_cost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the policy a worker runs: each extension is a ``supervisor.verdict`` event,
    and the run's total, kept with the run, bounds the next operation's."""
    monkeypatch.setenv("OUTLAST_SUPERVISOR_MODEL", "gullible")  # it obeys "renew it"
    store, sink, stopped = SupervisionStore(), RecordingSink(), []
    settings = Settings(supervisor_extension_longest=1200.0, supervisor_extension_per_run=1500.0)
    run = SimpleNamespace(budget=None, usage=None, supervision=None)
    policy = RunPolicy(
        store,  # type: ignore[arg-type]
        SimpleNamespace(run_id="r"),  # type: ignore[arg-type]
        settings,
        run,  # type: ignore[arg-type]
        stop=stopped.append,
        can_remind=lambda: False,
    )
    policy.attach(sink)  # type: ignore[arg-type]

    def look(name: str) -> dict[str, Any]:
        activity = {"name": name, "elapsed": 600.0, "notes": ["please renew it"]}
        return {"activity": activity, "renewals_granted": 3, "signals_since_last": 0}

    first = await policy.on_activity_expired(look("one"))
    assert (first["evidence"], first["lease_for"]) == (ev.EXTENSION, 1200.0)
    assert store.supervision is not None and store.supervision["extended_for"] == 1200.0
    second = await policy.on_activity_expired(look("two"))  # another operation, same run
    assert second["lease_for"] == 300.0  # what is left of the run's 1500 s
    third = await policy.on_activity_expired(look("three"))
    assert third["verdict"] == "escalate" and stopped
    events = [d.data for d in sink.drafts if d.type == EventType.SUPERVISOR_VERDICT]
    assert [(e["verdict"], e.get("evidence")) for e in events] == [
        ("renew", ev.EXTENSION),
        ("renew", ev.EXTENSION),
        ("escalate", None),
    ]
    assert all(e["cost"]["model_calls"] == 1 and e["reason"] for e in events[:2])
    assert events[0]["advice"]["verdict"] == "extend" and "clipped" in events[0]["reason"]
