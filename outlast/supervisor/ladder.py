"""The supervisor: what to do when an activity lease expires. Never kill by default.

A compiled LangGraph subgraph (it shows as ``supervisor`` in LangGraph Studio) that climbs
a ladder, cheapest tier first, and stops at the first tier that can decide:

1. heuristic: signs of life since the last look → renew;
2. structured check: the activity's probe (a function the node registered with
   ``heartbeat(probe=...)``) says alive → renew, done or failed → close;
3. semantic verdict: only with ``OUTLAST_SUPERVISOR_MODEL``; the model picks one verdict
   from a fixed set, the content under judgment passed as quoted data, never as
   instructions; an answer outside the set, or none, falls through;
4. intervention: renew while under the renewal cap; past it, remind the agent of its goal
   once (graphs with a ``messages`` channel: a supervisor message is added to the
   conversation and the node runs again), then escalate to a person.

Renewals are capped per activity; past the cap the ladder goes straight to intervention.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict  # pydantic (LangGraph Studio) needs it on 3.11

from outlast.vocabulary import VERDICTS, Verdict


class SupervisorState(TypedDict, total=False):
    trigger: str
    activity: dict[str, Any]
    signals_since_last: int
    renewals_granted: int
    renewal_cap: int
    probe: str | None
    quoted: str | None
    can_remind: bool
    reminders: int
    verdict: Verdict
    tier: int
    reason: str
    cost: dict[str, int]


def _decided(state: SupervisorState) -> bool:
    return state.get("verdict") in VERDICTS


def heuristic(state: SupervisorState) -> dict[str, Any]:
    if state.get("renewals_granted", 0) >= state.get("renewal_cap", 3):
        return {}  # past the cap: straight to intervention
    signals = state.get("signals_since_last", 0)
    if signals > 0:
        return {
            "verdict": "renew",
            "tier": 1,
            "reason": f"{signals} sign(s) of life since the last look",
        }
    return {}


def _call(path: str) -> Any:
    module, _, name = path.partition(":")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target()


async def structured(state: SupervisorState) -> dict[str, Any]:
    path = state.get("probe")
    if not path or state.get("renewals_granted", 0) >= state.get("renewal_cap", 3):
        return {}
    try:
        status = _call(path)
        if inspect.isawaitable(status):
            status = await status
    except Exception as exc:  # a probe that fails says nothing either way
        return {"reason": f"probe failed: {type(exc).__name__}: {exc}"}
    answer = str(status.get("status") if isinstance(status, dict) else status).lower()
    if answer in ("alive", "running", "pending"):
        return {"verdict": "renew", "tier": 2, "reason": f"probe says {answer}"}
    if answer in ("done", "failed", "dead", "gone"):
        return {"verdict": "close", "tier": 2, "reason": f"probe says {answer}"}
    return {"reason": f"probe answered {answer!r}, which decides nothing"}


async def semantic(state: SupervisorState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.supervisor.judge import judge

    if state.get("renewals_granted", 0) >= state.get("renewal_cap", 3):
        return {}  # past the cap: straight to intervention
    # A model object may be handed in through the config (tests, the evaluation).
    model = config.get("configurable", {}).get("supervisor_model")
    verdict, reason, cost = await judge(dict(state), model)
    if verdict is None:
        return {"cost": cost, "reason": reason}
    return {"verdict": verdict, "tier": 3, "reason": reason, "cost": cost}


def intervene(state: SupervisorState) -> dict[str, Any]:
    granted, cap = state.get("renewals_granted", 0), state.get("renewal_cap", 3)
    if granted < cap:
        return {
            "verdict": "renew",
            "tier": 4,
            "reason": f"no sign of life; renewal {granted + 1} of {cap}",
        }
    if state.get("can_remind") and not state.get("reminders", 0):
        return {
            "verdict": "remind",
            "tier": 4,
            "reason": f"silent after {cap} renewal(s); reminding the agent of its goal",
        }
    return {
        "verdict": "escalate",
        "tier": 4,
        "reason": f"silent after {cap} renewal(s); a person decides",
    }


def build() -> StateGraph[SupervisorState]:
    builder = StateGraph(SupervisorState)
    builder.add_node("heuristic", heuristic)
    builder.add_node("structured", structured)
    builder.add_node("semantic", semantic)
    builder.add_node("intervene", intervene)
    builder.add_edge(START, "heuristic")
    for tier, following in (
        ("heuristic", "structured"),
        ("structured", "semantic"),
        ("semantic", "intervene"),
    ):
        builder.add_conditional_edges(
            tier, lambda s, nxt=following: END if _decided(s) else nxt, [following, END]
        )
    builder.add_edge("intervene", END)
    return builder


supervisor = build().compile()
