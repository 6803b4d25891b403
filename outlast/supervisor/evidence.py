"""What counts as evidence when an activity lease expires, and how much time it buys.

The supervisor's rule is that no single model answer ends an operation, and that one
extends it only past the cap and within hard bounds (``supervisor/extension.py``): the
model reads the operation's own text (notes, tool output, error messages), and that text
may have been written to steer it. So every other verdict that acts rests on evidence
that text cannot forge, because it comes from the operation's code or from the clock:

- **progress**: a ``progress(..., fraction)`` whose fraction rose past the best seen, or
  a probe whose ``progress`` rose. Progress renews without limit (the mission budget, the
  third clock, bounds the run) and starts the renewal count again;
- **declared duration**: ``heartbeat(expected=...)`` said how long the operation takes;
  until then its silence is expected, and one renewal reaches the declared end;
- **life without progress**: heartbeats since the last look, or a probe that says
  ``alive``/``running``. It renews, counted against the renewal cap, because a loop that
  heartbeats or a job stuck in ``running`` looks exactly like this;
- **silence**: nothing at all. Blind renewals, counted against the same cap.

Renewals back off: the k-th renewal since the last progress lasts ``ttl × backoff**k``,
so a slow, silent operation is looked at a few times, not every lease, and a stuck one
still reaches the cap (three renewals cover 2 + 4 + 8 = 14 leases of silence by default).

A probe's ``done``/``failed`` closes only when the previous answer said so too: providers
flap, and one bad answer from a health endpoint is not the end of a job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# What a probe may answer (a string, or a dict with ``status`` and maybe ``progress``).
ALIVE = frozenset({"alive", "running", "pending", "queued"})
TERMINAL = frozenset({"done", "failed", "dead", "gone"})
ERROR = "error"  # the probe raised or timed out: it says nothing either way

# How many of a probe's answers the supervisor remembers for one activity.
PROBE_MEMORY = 6


def probe_answer(raw: Any) -> dict[str, Any]:
    """A probe's answer as ``{"status", "progress"?, "detail"?}``, status lower-case."""
    if isinstance(raw, Mapping):
        status = str(raw.get("status", "")).strip().lower()
        answer: dict[str, Any] = {"status": status}
        fraction = raw.get("progress")
        if isinstance(fraction, int | float) and not isinstance(fraction, bool):
            answer["progress"] = float(fraction)
        if raw.get("detail") is not None:
            answer["detail"] = str(raw["detail"])[:500]
        return answer
    return {"status": str(raw).strip().lower()}


def probe_failed(exc: BaseException) -> dict[str, Any]:
    return {"status": ERROR, "detail": f"{type(exc).__name__}: {exc}"[:500]}


def probe_progressed(answer: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> bool:
    """The probe's progress rose past every earlier answer's."""
    now = answer.get("progress")
    if now is None:
        return False
    before = [h["progress"] for h in history if h.get("progress") is not None]
    return not before or now > max(before)


def confirmed_end(answer: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> bool:
    """A terminal answer that the previous answer confirms."""
    return (
        answer.get("status") in TERMINAL and bool(history) and history[-1].get("status") in TERMINAL
    )


def spacing(ttl: float, backoff: float, renewals: int) -> float:
    """How long the next capped renewal lasts, after ``renewals`` since the last progress."""
    return float(ttl * backoff ** (renewals + 1))


def until_declared(elapsed: float, expected: float | None, ttl: float) -> float | None:
    """A renewal reaching the declared end of the operation; None once it is overdue."""
    if expected is None or elapsed >= expected:
        return None
    return max(ttl, expected - elapsed)


# The kinds of evidence a renewal rests on (the ``evidence`` of a verdict). Progress
# starts the renewal count again; life and silence count against the cap; a declared
# duration, an end still to be confirmed and the model's bounded extension
# (``supervisor/extension.py``, counted against its own bounds) neither count nor reset.
PROGRESS = "progress"
DECLARED = "declared"
LIFE = "life"
SILENCE = "silence"
UNCONFIRMED = "unconfirmed end"
EXTENSION = "extension"
COUNTED = frozenset({LIFE, SILENCE})
