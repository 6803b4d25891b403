"""The budget's pure parts: resolving limits, metering a stream, moving soft limits."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from outlast.runtime.budget import (
    DIMENSIONS,
    BudgetInvalid,
    BudgetMeter,
    granted,
    resolve_budget,
    tranche_schema,
    with_soft,
)
from outlast.supervisor.decisions import doubled

PRICES = {"m": {"input": 2.0, "output": 10.0}}  # USD per million tokens


def _start(name: str) -> dict[str, Any]:
    return {"type": "tasks", "data": {"id": name, "name": name, "input": {}}}


def _end(name: str) -> dict[str, Any]:
    return {"type": "tasks", "data": {"id": name, "name": name, "result": {}}}


def _model_update(tool_calls: int, tokens_in: int, tokens_out: int) -> dict[str, Any]:
    message = AIMessage(
        content="",
        tool_calls=[{"name": "t", "args": {}, "id": f"c{i}"} for i in range(tool_calls)],
        usage_metadata={
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
        response_metadata={"model_name": "m"},
    )
    return {"type": "updates", "data": {"model": {"messages": [message]}}}


def test_resolve_merges_defaults_request_and_caps() -> None:
    limits = resolve_budget(
        {"steps": {"soft": 4}},
        {"steps": {"hard": 10}, "tokens": {"soft": 100}},
        {"steps": {"hard": 20}, "cost": {"hard": 5}},
    )
    assert limits == {
        "steps": {"soft": 4.0, "hard": 10.0},
        "tokens": {"soft": 100.0, "hard": None},
        "cost": {"soft": None, "hard": 5.0},  # a cap applies unasked
    }
    assert resolve_budget(None, {}, {}) is None
    assert resolve_budget({}, {}, {"steps": {"hard": 3}}) == {"steps": {"soft": None, "hard": 3.0}}


@pytest.mark.parametrize(
    "requested",
    [
        {"steps": {"hard": 21}},  # above the operator's cap
        {"rockets": {"hard": 1}},
        {"steps": {"soft": 5, "hard": 2}},
        {"steps": {"soft": -1}},
        {"steps": {"hard": "lots"}},
        {"steps": {"hard": True}},
        {"steps": {"hard": float("inf")}},
        {"steps": {"ceiling": 3}},
        {"steps": 4},
    ],
)
def test_resolve_refuses_what_is_not_a_budget(requested: dict[str, Any]) -> None:
    with pytest.raises(BudgetInvalid):
        resolve_budget(requested, {}, {"steps": {"hard": 20}})


def test_meter_counts_steps_branches_tool_calls_tokens_and_cost() -> None:
    meter = BudgetMeter({"steps": {"soft": None, "hard": 100}}, None, PRICES)
    for name in ("a", "b", "c"):
        meter.on_part(_start(name))
    for name in ("a", "b", "c"):
        meter.on_part(_end(name))
    meter.on_part(_start("model"))
    meter.on_part(_model_update(tool_calls=2, tokens_in=1000, tokens_out=500))
    meter.on_part(_end("model"))
    usage = meter.usage()
    assert set(usage) == set(DIMENSIONS)
    assert usage["steps"] == 4 and usage["parallel_branches"] == 3
    assert usage["tool_calls"] == 2 and usage["tokens"] == 1500
    assert usage["cost"] == pytest.approx((1000 * 2.0 + 500 * 10.0) / 1_000_000)


def test_meter_resumes_from_stored_usage_and_shows_only_the_dimensions() -> None:
    stored = {"steps": 7, "tokens": 30, "partial": {"level": "hard"}, "auto_tranches": 2}
    meter = BudgetMeter({"steps": {"soft": 8, "hard": None}}, stored, {})
    meter.on_part(_start("n"))
    usage = meter.usage()
    assert set(usage) == set(DIMENSIONS)  # never what else a stored usage held
    assert usage["steps"] == 8 and usage["tokens"] == 30


def test_breach_reports_the_hard_cap_before_the_soft_limit() -> None:
    meter = BudgetMeter(
        {"steps": {"soft": 2, "hard": None}, "tool_calls": {"soft": None, "hard": 1}}, None, {}
    )
    assert meter.breach() is None
    meter.on_part(_start("a"))
    meter.on_part(_start("b"))
    soft = meter.breach()
    assert soft is not None and (soft.level, soft.dimension, soft.used) == ("soft", "steps", 2)
    meter.on_part(_model_update(tool_calls=1, tokens_in=0, tokens_out=0))
    hard = meter.breach()
    assert hard is not None and hard.describe() == {
        "level": "hard",
        "dimension": "tool_calls",
        "used": 1.0,
        "limit": 1,
    }


def test_a_tranche_never_passes_the_hard_cap() -> None:
    assert doubled(3, 20) == 6 and doubled(12, 20) == 20 and doubled(3, None) == 6
    assert doubled(20, 20) is None and doubled(None, 20) is None
    limits = {"steps": {"soft": 3.0, "hard": 10.0}, "tokens": {"soft": None, "hard": 5.0}}
    assert granted(limits, "steps", 4)["steps"] == {"soft": 7.0, "hard": 10.0}
    assert granted(limits, "steps", 40)["steps"] == {"soft": 10.0, "hard": 10.0}
    assert granted(limits, "tokens", 2)["tokens"] == {"soft": 2.0, "hard": 5.0}
    moved = with_soft(limits, "steps", 6.0)
    assert moved["steps"]["soft"] == 6.0 and limits["steps"]["soft"] == 3.0  # a copy


def test_the_tranche_schema_bounds_the_answer_by_the_room_left() -> None:
    schema = tranche_schema({"soft": 3.0, "hard": 10.0}, "steps")
    assert schema["properties"]["tranche"]["maximum"] == 7.0
    assert (
        "maximum"
        not in tranche_schema({"soft": 3.0, "hard": None}, "steps")["properties"]["tranche"]
    )
