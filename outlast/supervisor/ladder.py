"""The supervisor: what to do when an activity lease expires. Never kill by default.

A compiled LangGraph subgraph (it shows as ``supervisor`` in LangGraph Studio) that climbs
a ladder, cheapest tier first, and stops at the first tier that can decide. What each
kind of evidence is worth is in ``supervisor/evidence.py``; in short:

1. heuristic: progress since the last look → renew (uncapped); within the duration the
   node declared → renew to its end; heartbeats without progress → renew, capped;
2. structured check: the probe the node registered (``heartbeat(probe=...)``): rising
   progress → renew (uncapped); alive → renew, capped; done or failed twice in a row →
   close; once → look again after one lease;
3. semantic verdict: only with ``OUTLAST_SUPERVISOR_MODEL``, and only past the cap, where
   the evidence has said all it can and the operation's words are what is left (its
   notes, and in a conversation its last messages: ``supervisor/conversation.py``): when
   an extension is still within its bounds, or the conversation is about to get a
   supervisor message. An ``extend`` (or ``renew``) buys one bounded extension
   (``supervisor/extension.py``); ``remind`` or ``change_strategy`` picks that message;
   ``probe`` buys one lease, from the same bounds; any other answer is advice, kept in
   the event. Within the run's and the process's budgets of calls, and answered from a
   cache for a question already asked (``supervisor/costs.py``); over a budget, as
   without a model;
4. intervention: a blind renewal while under ``renewal_cap``; past it, once, remind the
   agent of its goal (graphs with a ``messages`` channel), then escalate to a person.

And the model's early look (``supervisor/suspicion.py``): on a renewal without progress
from ``early_look_from`` renewals on, a model that doubts the operation makes that
renewal last one lease instead of the backed-off wait; the cap comes sooner, nothing else.

The model's answer never ends an operation: a ``close`` needs the probe's word twice (or
a person's). It extends one only within the extension's bounds (by default three of
at most 30 min each, 90 min per operation, 3 h per run); every other renewal needs progress,
a declared duration, life or silence under the cap. Content that steers the model can
change the wording of a reminder, delay a stuck operation's stop by those bounds, and
bring a fine one's cap forward (to a person or the model's extension sooner), nothing
else; ``bench/supervisor_eval.py`` measures that with a model that obeys every
instruction it reads.
"""

from __future__ import annotations

import inspect
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict  # pydantic (LangGraph Studio) needs it on 3.11

from outlast.importing import resolve
from outlast.supervisor import evidence as ev
from outlast.supervisor import extension, suspicion
from outlast.supervisor.decisions import REMINDING
from outlast.vocabulary import VERDICTS, Verdict


class SupervisorState(TypedDict, total=False):
    trigger: str
    # facts: name, kind, silent_for, elapsed, notes, fraction …; for the model, in a
    # conversation, its last messages (``supervisor/conversation.py``)
    activity: dict[str, Any]
    ttl: float  # the activity lease, seconds
    backoff: float  # each capped renewal lasts this much longer than the one before
    signals_since_last: int  # signs of life since the last look
    progressed: bool  # the fraction rose past its best since the last look
    expected: float | None  # seconds the node declared the operation takes
    renewals_granted: int  # capped renewals since the last progress
    renewal_cap: int
    early_look_from: int  # capped renewals before the model's early look; 0: none
    probe: str | None
    probe_history: list[dict[str, Any]]  # the probe's earlier answers, oldest first
    quoted: str | None
    can_remind: bool
    reminders: int
    doubted: str  # the early look's doubt (its verdict) since the last progress
    # the model's last verdict on the operation and the key of what it was shown: it
    # answers again while the operation shows nothing new (``supervisor/costs.py``)
    standing: dict[str, Any]
    extensions: int  # the model's extensions of this operation so far
    extended_for: float  # ... and the seconds they granted
    run_extended_for: float  # the seconds the model's extensions granted the whole run
    extension_bounds: dict[str, Any]  # ``extension.Bounds``' fields; defaults when absent
    run_model_calls: int  # the run's model calls so far (``supervisor/costs.py``)
    max_calls_per_run: int  # ... and how many it may make; the setting's default when absent
    # the answer
    verdict: Verdict
    tier: int
    reason: str
    cost: dict[str, float]
    evidence: str  # what a renewal rests on (``evidence.PROGRESS`` …)
    lease_for: float  # how long a renewal lasts, seconds
    probe_answer: dict[str, Any]  # this look's probe answer, for the history
    advice: dict[str, Any]  # the model's answer, when it was asked
    model_call: str  # what became of the question to the model (``costs.CALLED`` …)
    judge: str  # ... and the model it went to (``costs.chosen``)


def _decided(state: SupervisorState) -> bool:
    return state.get("verdict") in VERDICTS


def _ttl(state: SupervisorState) -> float:
    return float(state.get("ttl") or 30.0)


def _under_cap(state: SupervisorState) -> bool:
    return state.get("renewals_granted", 0) < state.get("renewal_cap", 3)


def _renew(state: SupervisorState, tier: int, evidence: str, reason: str) -> dict[str, Any]:
    if evidence in ev.COUNTED:
        granted = state.get("renewals_granted", 0)
        reason = f"{reason}; renewal {granted + 1} of {state.get('renewal_cap', 3)}"
        if state.get("doubted"):
            # once doubted (``supervisor/suspicion.py``), no backing off until progress
            lease, reason = _ttl(state), f"{reason}, one lease: doubted"
        else:
            lease = ev.spacing(_ttl(state), float(state.get("backoff") or 1.0), granted)
    else:
        lease = _ttl(state)
    return {
        "verdict": "renew",
        "tier": tier,
        "reason": reason,
        "evidence": evidence,
        "lease_for": round(lease, 3),
    }


def heuristic(state: SupervisorState) -> dict[str, Any]:
    if state.get("progressed"):
        return _renew(state, 1, ev.PROGRESS, "progress since the last look")
    elapsed = float((state.get("activity") or {}).get("elapsed") or 0.0)
    declared = ev.until_declared(elapsed, state.get("expected"), _ttl(state))
    if declared is not None:
        return {
            **_renew(state, 1, ev.DECLARED, f"within its declared {state.get('expected'):g} s"),
            "lease_for": round(declared, 3),
        }
    signals = state.get("signals_since_last", 0)
    if signals > 0 and _under_cap(state):
        return _renew(state, 1, ev.LIFE, f"{signals} sign(s) of life, no progress")
    return {}


def _call(path: str) -> Any:
    return resolve(path)()


async def structured(state: SupervisorState) -> dict[str, Any]:
    path = state.get("probe")
    if not path:
        return {}
    try:
        raw = _call(path)
        if inspect.isawaitable(raw):
            raw = await raw
        answer = ev.probe_answer(raw)
    except Exception as exc:  # a probe that fails says nothing either way
        answer = ev.probe_failed(exc)
    history = state.get("probe_history") or []
    status = answer["status"]
    said = {"probe_answer": answer}
    if status in ev.ALIVE and ev.probe_progressed(answer, history):
        return {**said, **_renew(state, 2, ev.PROGRESS, f"probe says {status}, progressing")}
    if status in ev.ALIVE and _under_cap(state):
        return {**said, **_renew(state, 2, ev.LIFE, f"probe says {status}")}
    if ev.confirmed_end(answer, history):
        return {**said, "verdict": "close", "tier": 2, "reason": f"probe says {status} twice"}
    if status in ev.TERMINAL:
        reason = f"probe says {status} once; asking again after one lease"
        return {**said, **_renew(state, 2, ev.UNCONFIRMED, reason)}
    return {**said, "reason": f"probe answered {status!r}, which decides nothing here"}


def _reminder_due(state: SupervisorState) -> bool:
    return bool(state.get("can_remind")) and not state.get("reminders", 0)


async def semantic(state: SupervisorState, config: RunnableConfig) -> dict[str, Any]:
    from outlast.supervisor.costs import ask_configured, said, standing

    if _under_cap(state):
        return {}  # the evidence still decides
    doubt = state.get("doubted")
    if doubt:
        return _doubt_stands(state, doubt)
    room = extension.room(state)
    if not room and not _reminder_due(state):
        return {}  # the model's reading changes nothing here: no call
    asked = await ask_configured(state, config)
    verdict, reason, cost, seconds = asked.judged
    if verdict is None:
        return {"cost": cost, "reason": reason, **said(asked)}
    advice: dict[str, Any] = {"verdict": verdict, "reason": reason}
    if seconds is not None:
        advice["seconds"] = seconds
    acted = {"tier": 3, "cost": cost, "advice": advice, **said(asked), **standing(asked)}
    if verdict in extension.ASKING and room:
        granted = extension.grant(state, verdict, seconds, _ttl(state))
        if granted is not None:
            return {**granted, **acted}
    if verdict == "probe" and room:
        # "cannot tell yet": one lease more, from the extension's bounds, so that the
        # probe is asked again; bounded like any extension
        granted = extension.grant(state, "extend", _ttl(state), _ttl(state))
        if granted is not None:
            return {**granted, **acted}
    if verdict in REMINDING and _reminder_due(state):
        return {"verdict": verdict, "reason": reason, **acted}
    return {"cost": cost, "advice": advice, **said(asked), **standing(asked)}


def _doubt_stands(state: SupervisorState, doubt: str) -> dict[str, Any]:
    """The early look's doubt is the model's answer at the cap: no second call, and no
    extension for an operation the model itself doubted (``supervisor/suspicion.py``)."""
    advice = {"verdict": doubt, "reason": "the early look's doubt, standing since"}
    if doubt in REMINDING and _reminder_due(state):
        reason = f"the model's doubt ({doubt}) stands; a supervisor message"
        return {"verdict": doubt, "tier": 3, "reason": reason, "advice": advice}
    return {"advice": advice}


def intervene(state: SupervisorState) -> dict[str, Any]:
    cap = state.get("renewal_cap", 3)
    if _under_cap(state):
        return _renew(state, 4, ev.SILENCE, "no sign of life")
    advice = state.get("advice")
    heard = f" (the model advised {advice['verdict']})" if advice else ""
    if _reminder_due(state):
        return {
            "verdict": "remind",
            "tier": 4,
            "reason": f"no progress after {cap} renewal(s); reminding the agent of its goal"
            + heard,
        }
    return {
        "verdict": "escalate",
        "tier": 4,
        "reason": f"no progress after {cap} renewal(s); a person decides" + heard,
    }


def _after(following: str) -> Any:
    """Where a tier goes next: on when it did not decide; to the model's early look when
    it renewed without progress late enough (``suspicion.due``); else the end."""

    def route(state: SupervisorState) -> str:
        if not _decided(state):
            return following
        return "early_look" if suspicion.due(state) else END

    return route


def build() -> StateGraph[SupervisorState]:
    builder = StateGraph(SupervisorState)
    builder.add_node("heuristic", heuristic)
    builder.add_node("structured", structured)
    builder.add_node("semantic", semantic)
    builder.add_node("intervene", intervene)
    builder.add_node("early_look", suspicion.early_look)
    builder.add_edge(START, "heuristic")
    for tier, following in (
        ("heuristic", "structured"),
        ("structured", "semantic"),
        ("semantic", "intervene"),
        ("intervene", END),
    ):
        builder.add_conditional_edges(
            tier, _after(following), list(dict.fromkeys([following, "early_look", END]))
        )
    builder.add_edge("early_look", END)
    return builder


supervisor = build().compile()
