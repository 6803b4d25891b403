"""The one thing the model's word may do on its own: a bounded extension, past the cap.

Past ``renewal_cap`` the evidence has said all it can: an operation that is silent or
only alive looks the same whether it waits for a rate limit to reset or repeats a step
forever (``bench/supervisor_ambiguous.py`` holds such twins), and only its words tell.
There the model's ``extend`` (or ``renew``) buys more time, because a person woken for
an operation that was fine is a cost too. The operation's text may have been written to
steer the model, so what the model can buy is bounded, and the bounds are what a
steered model can cost at worst:

- one extension lasts at most ``longest`` seconds, whatever the model asks for; a
  ``renew`` (no length) gets ``longest``;
- at most ``count`` extensions per operation, and ``per_operation`` seconds in all;
- at most ``per_run`` seconds over all the run's operations (its attempts included: the
  total lives in the run's ``Supervision``).

So a stuck operation is stopped at most ``min(count × longest, per_operation)`` later
than without a model, far inside the evaluation's 8 h horizon. Refused, the verdict is
advice, and the ladder goes on as before (a reminder, then a person).

The bounds are settings (``OUTLAST_SUPERVISOR_EXTENSION_*``), like the renewal cap:
how long a stuck operation may hold its slot is the operator's price for fewer pages,
and the operator who picks the model knows how far it is trusted. A question without
them (a test, the evaluation) gets the settings' defaults, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from outlast.config import Settings
from outlast.supervisor import evidence as ev


def _default(name: str) -> Any:
    return Settings.model_fields[f"supervisor_extension_{name}"].default


# The verdicts that ask for more time.
ASKING = frozenset({"extend", "renew"})


@dataclass(frozen=True, slots=True)
class Bounds:
    longest: float = _default("longest")
    count: int = _default("count")
    per_operation: float = _default("per_operation")
    per_run: float = _default("per_run")

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> Bounds:
        given = state.get("extension_bounds") or {}
        return cls(**given)

    @classmethod
    def of_settings(cls, settings: Settings) -> Bounds:
        return cls(
            settings.supervisor_extension_longest,
            settings.supervisor_extension_count,
            settings.supervisor_extension_per_operation,
            settings.supervisor_extension_per_run,
        )


def room(state: Mapping[str, Any]) -> float:
    """Seconds an extension could still last now; 0 when a bound is reached."""
    bounds = Bounds.of(state)
    if int(state.get("extensions") or 0) >= bounds.count:
        return 0.0
    left = min(
        bounds.longest,
        bounds.per_operation - float(state.get("extended_for") or 0.0),
        bounds.per_run - float(state.get("run_extended_for") or 0.0),
    )
    return max(0.0, left)


def grant(
    state: Mapping[str, Any], verdict: str, seconds: float | None, ttl: float
) -> dict[str, Any] | None:
    """The ladder's answer to an ``extend``/``renew`` verdict past the cap, or None when
    no extension is left. What was asked, what was granted and which bound clipped it go
    in the reason: the event is the only account a person reading the log gets."""
    left = room(state)
    if left <= 0:
        return None
    bounds = Bounds.of(state)
    # a renew, or an extend without a length: the model said "not yet" without saying
    # how long, so it gets the longest an extension lasts, the worst a steered one gets
    asked = float(seconds) if verdict == "extend" and seconds is not None else bounds.longest
    lease = min(max(asked, ttl), left)
    done = int(state.get("extensions") or 0) + 1
    clipped = f", clipped from {asked:g} s" if asked > lease else ""
    return {
        "verdict": "renew",
        "tier": 3,
        "evidence": ev.EXTENSION,
        "lease_for": round(lease, 3),
        "reason": f"the model's {verdict}: extension {done} of {bounds.count}, "
        f"{lease:g} s{clipped}; "
        f"{float(state.get('extended_for') or 0.0) + lease:g} of {bounds.per_operation:g} s "
        f"for this operation, {float(state.get('run_extended_for') or 0.0) + lease:g} of "
        f"{bounds.per_run:g} s for the run",
    }
