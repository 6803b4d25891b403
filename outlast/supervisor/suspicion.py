"""The model's look before the renewal cap: a doubt brings the next look sooner.

Before the cap the evidence renews an operation that is alive without progress, or
silent, and those renewals back off (2, 4, then 8 leases by default), so a stuck
operation that only its words give away (``bench/supervisor_ambiguous.py``: a step
repeated under a "rate limit", an upload resending one part) runs some 14 leases before
the cap, and a reminder or a person, is reached. From ``early_look_from`` renewals on,
the model reads those words earlier. What its answer may do there is the least that
helps: a doubt (``probe``, ``close``, ``escalate``, ``remind``, ``change_strategy``)
makes this renewal and the counted ones after it, until progress, last one lease
instead of the backed-off wait, so the probe is asked again sooner and the cap comes
sooner. The model is asked once per stall: a doubt stands until progress, at the cap too,
where it is the model's answer without a second call (no extension after a doubt; its
verdict words a reminder or goes to the person as advice). The renewal
is still counted against the cap and still rests on the evidence that granted it;
nothing is ended, extended or handed to a person on the model's word. Any other answer
leaves the renewal as the evidence set it.

Why no more than that: the ambiguous twins share every fact the evidence tiers read, so
any rule that stops the stuck twin early on a perfect model's word (plus evidence) stops
the fine twin early on a steered model's word (plus the same evidence), and an injected
"escalate" would be obeyed. A shorter wait is the one effect whose worst case is fixed
by the ladder: a wrong doubt brings the cap forward, from 2 + 4 + 8 leases without
progress to 2 + 1 + 1, and at the cap the fine operation still gets the model's bounded
extension (``supervisor/extension.py``) or a person, as it would have later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from outlast.config import Settings
from outlast.supervisor import evidence as ev

# The model's answers that doubt the operation: they pace the next look, nothing more.
DOUBTING = frozenset({"probe", "close", "escalate", "remind", "change_strategy"})

EARLY_FROM: int = Settings.model_fields["supervisor_early_look_from"].default


def due(state: Mapping[str, Any]) -> bool:
    """A counted renewal (life or silence, no progress) late enough to ask the model."""
    if state.get("verdict") != "renew" or state.get("evidence") not in ev.COUNTED:
        return False
    if state.get("doubted"):
        return False  # asked once per stall: the doubt lasts until progress
    start = state.get("early_look_from")
    start = EARLY_FROM if start is None else int(start)
    return start > 0 and int(state.get("renewals_granted") or 0) >= start and has_words(state)


def has_words(state: Mapping[str, Any]) -> bool:
    """The operation wrote something the evidence cannot read (a note, a message, output,
    a probe's detail). Without words a model sees only the facts the evidence tiers
    already weighed, and its doubt would be a guess: no call."""
    activity = state.get("activity") or {}
    if activity.get("note") or activity.get("notes") or activity.get("messages"):
        return True
    answers = state.get("probe_history") or []
    return bool(state.get("quoted")) or any(a.get("detail") for a in answers)


async def early_look(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """The model's answer on a renewal the evidence granted: a doubt shortens it, and the
    counted renewals after it until progress, to one lease; the verdict, what it rests
    on and the renewal count stay the evidence's."""
    from outlast.supervisor.costs import ask_configured, said, standing

    asked = await ask_configured(state, config)
    verdict, reason, cost, seconds = asked.judged
    if verdict is None:
        return {"cost": cost, **said(asked)} if asked.outcome else {}
    advice: dict[str, Any] = {"verdict": verdict, "reason": reason}
    if seconds is not None:
        advice["seconds"] = seconds
    looked = {"cost": cost, "advice": advice, **said(asked), **standing(asked)}
    ttl = float(state.get("ttl") or 30.0)
    if verdict not in DOUBTING or float(state.get("lease_for") or 0.0) <= ttl:
        return looked
    why = f"{state.get('reason', '')}; the model doubts it ({verdict}): looks one lease apart"
    return {**looked, "lease_for": round(ttl, 3), "reason": why, "doubted": verdict}
