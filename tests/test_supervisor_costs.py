"""What the semantic tier may spend (issue 33, must-have 4): budgets of model calls per
run and per process, a cache of verdicts per operation state, and the metrics that show
calls, tokens and cost (``supervisor/costs.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult

from outlast.config import Settings
from outlast.runtime.metrics import REGISTRY
from outlast.supervisor import costs
from outlast.supervisor.costs import CallBucket, Costs, VerdictCache
from outlast.supervisor.ladder import supervisor
from outlast.vocabulary import EventType
from tests.util import RecordingSink, SupervisionStore, expired_look, supervision_policy

# Past the renewal cap, silent, no conversation: the model may extend, else a person decides.
PAST = expired_look(
    {"name": "fetch", "elapsed": 600.0, "silent_for": 90.0, "note": "rate limit"},
    quoted="rate limit, resets at 14:20",
)
EXTEND = '{"verdict": "extend", "seconds": 600, "reason": "waits for the reset"}'
USAGE = {"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050}
EVIDENCE_ONLY = (4, "escalate")  # what the ladder does with no model configured


class Judge(GenericFakeChatModel):
    """Extends every time it is asked, reports its usage, and counts the calls."""

    model_name: str = "judge-mini"
    calls: int = 0

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        return super()._generate(messages, *args, **kwargs)


def _judge() -> Judge:
    return Judge(messages=iter([AIMessage(EXTEND, usage_metadata=USAGE)] * 10))  # type: ignore[arg-type]


async def _look(
    model: Any, spending: Costs | None = None, first: Any = None, **state: Any
) -> dict[str, Any]:
    config = {
        "configurable": {
            "supervisor_model": model,
            "supervisor_costs": spending,
            "supervisor_first_model": first,
        }
    }
    result: dict[str, Any] = await supervisor.ainvoke({**PAST, **state}, config)  # type: ignore[arg-type]
    return result


def _extended(result: dict[str, Any]) -> bool:
    return (result["tier"], result["verdict"], result.get("evidence")) == (3, "renew", "extension")


async def test_over_the_runs_budget_the_model_is_not_asked_and_the_evidence_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OUTLAST_SUPERVISOR_MODEL", raising=False)
    without_model = await _look(None)
    assert (without_model["tier"], without_model["verdict"]) == EVIDENCE_ONLY
    model = _judge()
    within = await _look(model, run_model_calls=1, max_calls_per_run=2)
    assert _extended(within) and within["model_call"] == costs.CALLED and model.calls == 1
    over = await _look(model, run_model_calls=2, max_calls_per_run=2)
    assert model.calls == 1  # not asked
    assert (over["tier"], over["verdict"]) == EVIDENCE_ONLY and "advice" not in over
    assert over["model_call"] == costs.OVER_BUDGET and over["cost"]["model_calls"] == 0


async def test_over_the_process_budget_the_model_is_not_asked_until_it_refills() -> None:
    now = [0.0]
    spending = Costs(bucket=CallBucket(2, lambda: now[0]))  # 2 calls a minute
    model = _judge()
    first, second, third = [
        await _look(model, spending, activity={"name": f"op{i}"}) for i in range(3)
    ]
    assert _extended(first) and _extended(second) and model.calls == 2
    assert (third["tier"], third["verdict"]) == EVIDENCE_ONLY
    assert third["model_call"] == costs.OVER_BUDGET
    now[0] = 30.0  # half a minute: one call's worth
    assert _extended(await _look(model, spending, activity={"name": "op3"}))
    assert (await _look(model, spending, activity={"name": "op4"}))["verdict"] == "escalate"
    assert model.calls == 3


def test_the_bucket_holds_one_minutes_calls_however_long_it_was_idle() -> None:
    now = [0.0]
    bucket = CallBucket(3, lambda: now[0])
    now[0] = 3600.0
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    assert not CallBucket(0, lambda: now[0]).take()  # 0: the model is never asked


async def test_the_same_question_is_answered_from_the_cache_and_a_changed_one_is_asked() -> None:
    now = [0.0]
    spending = Costs(cache=VerdictCache(8, 300.0, lambda: now[0]))
    model = _judge()
    first = await _look(model, spending)
    assert _extended(first) and first["model_call"] == costs.CALLED and model.calls == 1
    now[0] = 120.0  # the next look: its clocks moved, nothing else
    later = {**PAST["activity"], "elapsed": 720.0, "silent_for": 210.0}
    again = await _look(model, spending, activity=later)
    assert model.calls == 1 and again["model_call"] == costs.CACHED
    assert _extended(again) and again["advice"] == first["advice"]
    assert again["cost"] == {"model_calls": 0, "tokens": 0, "cached": 1}
    changed = await _look(model, spending, activity={**later, "note": "resets at 15:00"})
    assert changed["model_call"] == costs.CALLED and model.calls == 2
    now[0] = 500.0  # past the TTL of the first answer
    assert (await _look(model, spending))["model_call"] == costs.CALLED and model.calls == 3


async def test_a_standing_verdict_answers_while_the_operation_shows_nothing_new() -> None:
    """No process cache at all: the operation's own memory of the model's last answer.
    An extension later (heartbeats counted, seconds extended, the same words), it answers
    again without a call; a new note, or a silence a step longer on the coarse scale,
    is a new question."""
    model = _judge()
    first = await _look(model)
    assert first["model_call"] == costs.CALLED and model.calls == 1
    stood = first["standing"]
    assert stood["verdict"] == "extend" and stood["seconds"] == 600
    later = {**PAST["activity"], "elapsed": 1320.0, "silent_for": 120.0, "renewals": 9}
    again = await _look(model, activity=later, extensions=1, extended_for=600.0, standing=stood)
    assert model.calls == 1 and again["model_call"] == costs.CACHED and _extended(again)
    assert "extension 2 of 3" in again["reason"]
    assert "showed nothing new" in again["advice"]["reason"]
    noted = {**later, "note": "rate limit, resets at 15:00"}
    assert (await _look(model, activity=noted, standing=stood))["model_call"] == costs.CALLED
    silent = {**later, "silent_for": 1500.0}  # silent for 25 min, no longer for 2
    assert (await _look(model, activity=silent, standing=stood))["model_call"] == costs.CALLED
    assert model.calls == 3


def test_a_probe_answer_repeated_is_not_a_new_question() -> None:
    alive = {"status": "running", "detail": "page 7"}
    once = costs.question_key("m", {**PAST, "probe_history": [alive]})
    assert costs.question_key("m", {**PAST, "probe_history": [alive, alive, alive]}) == once
    moved = {"status": "running", "detail": "page 8"}
    assert costs.question_key("m", {**PAST, "probe_history": [alive, moved]}) != once


def test_an_activity_keeps_the_standing_verdict_for_its_next_look() -> None:
    import datetime as dt

    from outlast.runtime.looks import Activity

    act = Activity.begin("tool", "fetch", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 0.0)
    assert act.look(30.0)["standing"] is None
    stood = {"key": "k", "verdict": "extend", "reason": "r", "seconds": 600.0}
    act.settle({"verdict": "renew", "evidence": "extension", "standing": stood}, 30.0, 30.0)
    assert act.look(700.0)["standing"] == stood


def test_the_cache_drops_the_least_recently_used_verdict_first() -> None:
    cache = VerdictCache(2, 300.0, lambda: 0.0)
    answer = costs.Judged("extend", "r", {}, 600.0)
    cache.put("a", answer)
    cache.put("b", answer)
    assert cache.get("a") is answer  # a is now the most recent
    cache.put("c", answer)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (answer, None, answer)


def _look_at(name: str, note: str = "rate limit") -> dict[str, Any]:
    activity = {"name": name, "elapsed": 600.0, "silent_for": 90.0, "note": note}
    return {"activity": activity, "renewals_granted": 3, "signals_since_last": 0, "quoted": note}


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_the_runs_calls_are_kept_with_the_run_counted_and_priced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the policy a worker runs: the run's count outlives the attempt, and the
    metrics show each question's outcome, its tokens and its price."""
    model = _judge()
    monkeypatch.setenv("OUTLAST_SUPERVISOR_MODEL", "fake:judge-mini")
    monkeypatch.setattr(costs, "model_from_env", lambda name: model)
    settings = Settings(
        supervisor_max_calls_per_run=1, model_prices={"judge-mini": {"input": 1.0, "output": 4.0}}
    )
    names = ["called", "cached", "over_budget"]
    before = [_sample("outlast_supervisor_model_calls_total", outcome=o) for o in names]
    tokens = _sample("outlast_supervisor_model_tokens_total", kind="input")
    usd = _sample("outlast_supervisor_model_cost_usd_total")
    store, sink = SupervisionStore(), RecordingSink()
    policy = supervision_policy(store, sink, settings)
    assert _extended(await policy.on_activity_expired(_look_at("one")))
    assert store.supervision is not None and store.supervision["model_calls"] == 1
    assert _extended(await policy.on_activity_expired(_look_at("one")))  # cached: free
    resumed = supervision_policy(store, RecordingSink(), settings)  # the next attempt
    over = await resumed.on_activity_expired(_look_at("two", "another note"))
    assert over["verdict"] == "escalate" and model.calls == 1
    after = [_sample("outlast_supervisor_model_calls_total", outcome=o) for o in names]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 1, 1]
    assert _sample("outlast_supervisor_model_tokens_total", kind="input") - tokens == 1000
    assert _sample("outlast_supervisor_model_cost_usd_total") - usd == pytest.approx(0.0012)
    events = [d.data for d in sink.drafts if d.type == EventType.SUPERVISOR_VERDICT]
    assert events[0]["cost"]["usd"] == pytest.approx(0.0012)
    assert [e["model_call"] for e in events] == ["called", "cached"]


async def test_with_two_models_the_cheaper_takes_the_first_look_and_the_stronger_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cheap, strong = _judge(), _judge()
    strong.model_name = "judge-large"
    first = await _look(strong, first=cheap)
    assert _extended(first) and (cheap.calls, strong.calls) == (1, 0)
    assert first["judge"] == "judge-mini"
    after = await _look(strong, first=cheap, extensions=1, extended_for=600.0)
    assert _extended(after) and (cheap.calls, strong.calls) == (1, 1)
    assert after["judge"] == "judge-large"
    # configured by name: both, or the one model for every look
    monkeypatch.setenv("OUTLAST_SUPERVISOR_MODEL", "gullible")
    monkeypatch.setenv("OUTLAST_SUPERVISOR_FIRST_MODEL", "scripted")
    assert costs.chosen(PAST, None)[0] == "scripted"
    assert costs.chosen({**PAST, "extensions": 1}, None)[0] == "gullible"
    monkeypatch.delenv("OUTLAST_SUPERVISOR_MODEL")
    assert costs.chosen(PAST, None) == ("", None)  # a first-look model alone is not enough
