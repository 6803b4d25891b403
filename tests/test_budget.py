"""Budgets as checkpoints: soft limits ask, hard caps stop with the best result."""

from __future__ import annotations

from typing import Any

from outlast.runtime.budget import DIMENSIONS
from outlast.store import Store
from outlast.supervisor.decisions import Supervision
from tests.harness import (
    answer,
    collect,
    eventually,
    make_settings,
    post_run,
    serve,
    wait_result,
    wait_status,
)

LOOP = {"configurable": {"rounds": 20}, "recursion_limit": 100}


async def _loop(srv: Any, budget: dict[str, Any], config: dict[str, Any] | None = None) -> Any:
    return await post_run(
        srv.client, graph="looper", input={}, budget=budget, config=config or LOOP
    )


async def test_hard_cap_on_steps_completes_with_the_best_result(store: Store) -> None:
    async with serve(store) as srv:
        run = await _loop(srv, {"steps": {"hard": 5}})
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["partial"] is True
        assert final["result"]["n"] == 5  # stopped at the step boundary after the 5th step
        assert final["result"]["partial"] is True
        assert final["budget"]["limits"] == {"steps": {"soft": None, "hard": 5.0}}
        assert final["budget"]["usage"]["steps"] == 5
        assert set(final["budget"]["usage"]) == set(DIMENSIONS)  # the shape, exactly
        events = await collect(srv.client, run["id"])
        checkpoint = next(e for e in events if e.event == "budget.checkpoint").data["data"]
        assert checkpoint["level"] == "hard" and checkpoint["dimension"] == "steps"
        assert events[-1].data["data"]["partial"] is True


async def test_soft_limit_asks_a_person_who_grants_a_tranche_then_closes(store: Store) -> None:
    async with serve(store) as srv:
        run = await _loop(srv, {"steps": {"soft": 3, "hard": 10}})
        snap = await wait_status(srv.client, run["id"], "waiting")
        wait = snap["wait"]
        assert wait["kind"] == "budget" and wait["object"]["dimension"] == "steps"
        assert snap["budget"]["usage"]["steps"] == 3
        too_much = await answer(srv, run["id"], wait["id"], {"action": "continue", "tranche": 8})
        assert too_much.status_code == 422  # a tranche never passes the hard cap
        missing = await answer(srv, run["id"], wait["id"], {"action": "continue"})
        assert missing.status_code == 422
        ok = await answer(srv, run["id"], wait["id"], {"action": "continue", "tranche": 3})
        assert ok.status_code == 202

        async def next_checkpoint() -> Any:
            snap = (await srv.client.get(f"/v1/runs/{run['id']}")).json()
            assert snap["status"] != "completed", snap  # the tranche was not used up
            waiting = snap["status"] == "waiting" and snap["wait"]["id"] != wait["id"]
            return snap if waiting else None

        snap = await eventually(next_checkpoint, what="the next budget checkpoint")
        assert snap["budget"]["limits"]["steps"]["soft"] == 6.0
        assert snap["budget"]["usage"]["steps"] == 6
        close = await answer(srv, run["id"], snap["wait"]["id"], {"action": "close"})
        assert close.status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["partial"] is True
        assert final["result"]["n"] == 6


async def test_tool_calls_tokens_cost_and_wall_time_caps(store: Store) -> None:
    settings = make_settings(model_prices={"scripted": {"input": 1_000_000, "output": 0}})
    async with serve(store, settings) as srv:
        cases = [
            ({"tool_calls": {"hard": 2}}, LOOP, 2),
            ({"tokens": {"hard": 40}}, LOOP, 3),  # 15 per round: 45 >= 40 after round 3
            ({"cost": {"hard": 25}}, LOOP, 3),  # 10 USD per round at this price table
        ]
        for budget, config, rounds in cases:
            run = await _loop(srv, budget, config)
            final = await wait_result(srv.client, run["id"])
            assert final["partial"] is True and final["result"]["n"] == rounds, (budget, final)
        slow = {"configurable": {"rounds": 50, "step_delay": 0.05}, "recursion_limit": 100}
        run = await _loop(srv, {"wall_time": {"hard": 0.3}}, slow)
        final = await wait_result(srv.client, run["id"])
        # stopped by the clock (50 steps take 2.5 s at least), however slow the machine
        assert final["partial"] is True and 1 <= final["result"]["n"] < 50
        assert final["budget"]["usage"]["wall_time"] >= 0.3
        events = await collect(srv.client, run["id"])
        checkpoint = next(e for e in events if e.event == "budget.checkpoint").data["data"]
        assert (checkpoint["level"], checkpoint["dimension"]) == ("hard", "wall_time")


async def test_budgets_are_bounded_by_operator_caps(store: Store) -> None:
    settings = make_settings(
        budget_caps={"steps": {"hard": 8}}, budget_defaults={"tokens": {"soft": 1000}}
    )
    async with serve(store, settings) as srv:
        for bad in [
            {"steps": {"hard": 9}},
            {"rockets": {"hard": 1}},
            {"steps": {"soft": 5, "hard": 2}},
            {"steps": {"soft": -1}},
            {"steps": {"hard": "lots"}},
            {"steps": {"ceiling": 3}},
            {"steps": 4},
        ]:
            response = await srv.client.post(
                "/v1/runs", json={"graph": "looper", "input": {}, "budget": bad}
            )
            assert response.status_code == 422, (bad, response.text)
            assert response.headers["content-type"] == "application/problem+json"
        assert (await srv.client.get("/v1/runs")).json()["runs"] == []
        run = await _loop(srv, {})
        final = await wait_result(srv.client, run["id"])
        # no budget asked: the operator's cap and the default still apply
        assert final["budget"]["limits"]["steps"] == {"soft": None, "hard": 8.0}
        assert final["budget"]["limits"]["tokens"] == {"soft": 1000.0, "hard": None}
        assert final["partial"] is True and final["result"]["n"] == 8


async def test_an_unbudgeted_run_has_no_budget_and_is_never_partial(store: Store) -> None:
    async with serve(store) as srv:
        run = await _loop(srv, {}, {"configurable": {"rounds": 4}})
        final = await wait_result(srv.client, run["id"])
        assert final["budget"] is None and final["partial"] is False and final["result"]["n"] == 4


async def test_the_supervisor_grants_operator_allowed_tranches_only_with_progress(
    store: Store,
) -> None:
    async with serve(store, make_settings(budget_auto_tranches=2)) as srv:
        run = await _loop(srv, {"steps": {"soft": 3, "hard": 20}})
        snap = await wait_status(srv.client, run["id"], "waiting")
        # two tranches, each doubling the soft limit: 3 → 6 → 12; at 12 a person decides
        assert snap["budget"]["limits"]["steps"] == {"soft": 12.0, "hard": 20.0}
        assert snap["budget"]["usage"]["steps"] == 12
        events = await store.read_events(run["id"], 0, 1000)  # the run waits: no stream end
        verdicts = [e.data for e in events if e.type == "supervisor.verdict"]
        assert [v["verdict"] for v in verdicts] == ["continue", "continue", "escalate"]
        assert all(v["trigger"] == "budget_soft" for v in verdicts)
        assert snap["wait"]["kind"] == "budget"
        # the snapshot shows the documented dimensions and nothing of the supervisor's
        assert set(snap["budget"]["usage"]) == set(DIMENSIONS)
        row = await store.get_run(run["id"])
        assert row is not None and set(row.usage or {}) == set(DIMENSIONS)
        # the tranches it granted are the supervisor's own memory of the run
        assert Supervision.of(row.supervision).auto_tranches == 2
        # a person closes it; the hard cap itself was never raised
        assert (
            await answer(srv, run["id"], snap["wait"]["id"], {"action": "close"})
        ).status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["partial"] is True and final["result"]["n"] == 12
        assert final["budget"]["limits"]["steps"]["hard"] == 20.0  # never raised


async def test_tranches_stop_at_the_hard_cap(store: Store) -> None:
    async with serve(store, make_settings(budget_auto_tranches=5)) as srv:
        run = await _loop(srv, {"steps": {"soft": 3, "hard": 10}})
        final = await wait_result(srv.client, run["id"])
        # 3 → 6 → 10 (capped), then the hard cap ends it with the best result
        assert final["partial"] is True and final["result"]["n"] == 10
        assert final["budget"]["limits"]["steps"] == {"soft": 10.0, "hard": 10.0}


async def test_parallel_branches_cap(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client, graph="fanout", input={}, budget={"parallel_branches": {"hard": 2}}
        )
        final = await wait_result(srv.client, run["id"])
        # three branches started in one step: stopped at that step's boundary, before join
        assert final["partial"] is True and sorted(final["result"]["done"]) == ["a", "b", "c"]
        assert final["budget"]["usage"]["parallel_branches"] == 3


async def test_the_agent_cannot_raise_its_own_cap(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client,
            graph="greedy",
            input={},
            budget={"steps": {"hard": 4}},
            config={"configurable": {"rounds": 20}, "recursion_limit": 100},
        )
        final = await wait_result(srv.client, run["id"])
        assert final["partial"] is True and final["result"]["n"] == 4
        assert final["budget"]["limits"] == {"steps": {"soft": None, "hard": 4.0}}


async def test_without_progress_the_supervisor_closes_with_the_best_result(store: Store) -> None:
    async with serve(store, make_settings(budget_auto_tranches=3)) as srv:
        run = await post_run(
            srv.client,
            graph="spinner",
            input={"n": 7},
            budget={"steps": {"soft": 3, "hard": 50}},
            config={"recursion_limit": 100},
        )
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["partial"] is True
        assert final["result"] == {"n": 7, "log": [], "partial": True}
        events = await collect(srv.client, run["id"])
        verdicts = [e.data["data"]["verdict"] for e in events if e.event == "supervisor.verdict"]
        assert verdicts == ["continue", "close"]  # one tranche, then no progress: close
        assert final["budget"]["usage"]["steps"] == 6
        assert set(final["budget"]["usage"]) == set(DIMENSIONS)
        checkpoints = [e.data["data"] for e in events if e.event == "budget.checkpoint"]
        assert all(set(c["usage"]) == set(DIMENSIONS) for c in checkpoints) and checkpoints


SOFT = [
    ({"tool_calls": {"soft": 2, "hard": 10}}, "tool_calls"),
    ({"tokens": {"soft": 40, "hard": 1000}}, "tokens"),
    ({"cost": {"soft": 25, "hard": 1000}}, "cost"),
    ({"wall_time": {"soft": 0.2, "hard": 100}}, "wall_time"),
]


async def test_each_dimension_opens_a_checkpoint_at_its_soft_limit(store: Store) -> None:
    settings = make_settings(model_prices={"scripted": {"input": 1_000_000, "output": 0}})
    slow = {"configurable": {"rounds": 50, "step_delay": 0.03}, "recursion_limit": 200}
    async with serve(store, settings) as srv:
        for budget, dim in SOFT:
            run = await _loop(srv, budget, slow)
            snap = await wait_status(srv.client, run["id"], "waiting")
            assert snap["wait"]["kind"] == "budget" and snap["wait"]["object"]["dimension"] == dim
            assert snap["budget"]["usage"][dim] >= budget[dim]["soft"]
            await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        run = await post_run(
            srv.client,
            graph="fanout",
            input={},
            budget={"parallel_branches": {"soft": 2, "hard": 5}},
        )
        snap = await wait_status(srv.client, run["id"], "waiting")
        assert snap["wait"]["object"]["dimension"] == "parallel_branches"


async def test_without_progress_a_conversation_is_asked_to_change_strategy(store: Store) -> None:
    async with serve(store, make_settings(budget_auto_tranches=3)) as srv:
        run = await post_run(
            srv.client,
            graph="stuck_chat",
            input={"messages": [{"role": "user", "content": "solve it"}]},
            budget={"steps": {"soft": 3, "hard": 50}},
            config={"recursion_limit": 100},
        )
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["partial"] is False
        assert final["result"]["got"] == "tried another approach"
        events = await collect(srv.client, run["id"])
        verdicts = [e.data["data"]["verdict"] for e in events if e.event == "supervisor.verdict"]
        assert verdicts == ["continue", "change_strategy"]
