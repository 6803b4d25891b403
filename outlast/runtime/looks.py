"""One activity as the supervisor sees it: its signs of life, and what each look left.

Kept apart from the tracker's tasks and writes (``runtime/activity.py``) and written on an
explicit clock (``now``: monotonic seconds), so that the evaluation of the supervisor
(``bench/supervisor_eval.py``) replays hours of leases in virtual time through exactly
the code a worker runs.

What a look carries is what ``supervisor/evidence.py`` weighs: signs of life since the
last look, whether the fraction rose past its best (progress), the duration the node
declared, the capped renewals granted since the last progress, whether the model's early
look doubted it since, the model's bounded extensions so far, the probe's earlier
answers. The operation's texts (its latest notes) go along as quoted data for a model;
in a conversation, so do its last messages, but not from here: the policy reads them
from the run's checkpoint when, and only when, the model is asked
(``supervisor/conversation.py``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from outlast.supervisor import evidence as ev

NOTES_KEPT = 3  # the latest distinct notes a look quotes


@dataclass(slots=True)
class Activity:
    kind: str
    name: str
    started_at: dt.datetime
    started_mono: float
    last_signal_at: dt.datetime
    last_signal_mono: float
    renewals: int = 0  # signs of life
    note: str | None = None
    notes: list[str] = field(default_factory=list)
    fraction: float | None = None
    best: float | None = None  # the highest fraction reported
    best_seen: float | None = None  # ... as of the supervisor's last look
    expected: float | None = None  # seconds the node declared, from its start
    probe: str | None = None
    probe_history: list[dict[str, Any]] = field(default_factory=list)
    seen: int = 0  # signs of life counted at the supervisor's last look
    granted: int = 0  # capped renewals since the last progress
    granted_until: float = 0.0  # when the supervisor's last renewal ends (monotonic)
    extensions: int = 0  # the model's bounded extensions (``supervisor/extension.py``)
    extended_for: float = 0.0  # ... and the seconds they granted
    doubted: str | None = None  # the early look's doubt, its verdict (``supervisor/suspicion.py``)
    # the model's last verdict, standing while the operation shows nothing new
    # (``supervisor/costs.py``)
    standing: dict[str, Any] | None = None
    supervising: bool = False

    @classmethod
    def begin(cls, kind: str, name: str, wall: dt.datetime, now: float) -> Activity:
        return cls(kind, name, wall, now, wall, now)

    def sign(
        self,
        wall: dt.datetime,
        now: float,
        *,
        note: str | None = None,
        fraction: float | None = None,
        probe: str | None = None,
        expected: float | None = None,
    ) -> None:
        self.last_signal_at, self.last_signal_mono = wall, now
        self.renewals += 1
        if probe is not None:
            self.probe = probe
        if expected is not None:
            self.expected = expected
        if note is not None:
            self.note = note
            if note not in self.notes:
                self.notes = [*self.notes, note][-NOTES_KEPT:]
        if fraction is not None:
            self.fraction = fraction
            self.best = fraction if self.best is None else max(self.best, fraction)

    def deadline(self, ttl: float) -> float:
        """When the lease runs out: a lease after the last sign of life, or the end of
        the supervisor's last renewal, whichever is later."""
        return max(self.last_signal_mono + ttl, self.granted_until)

    def lease_expires_at(self, ttl: float) -> dt.datetime:
        later = self.deadline(ttl) - self.last_signal_mono
        return self.last_signal_at + dt.timedelta(seconds=later)

    def look(self, now: float) -> dict[str, Any]:
        """What the supervisor is shown, and the mark of this look (what the next one
        counts as new)."""
        best, before = self.best, self.best_seen
        progressed = best is not None and (before is None or best > before)
        question = {
            "activity": {
                "kind": self.kind,
                "name": self.name,
                "note": self.note,
                "notes": list(self.notes),
                "fraction": self.fraction,
                "silent_for": round(now - self.last_signal_mono, 3),
                "elapsed": round(now - self.started_mono, 3),
                "renewals": self.renewals,
            },
            "signals_since_last": self.renewals - self.seen,
            "progressed": progressed,
            "expected": self.expected,
            "renewals_granted": self.granted,
            "extensions": self.extensions,
            "extended_for": self.extended_for,
            "doubted": self.doubted,
            "standing": self.standing,
            "probe": self.probe,
            "probe_history": list(self.probe_history),
            "quoted": self.note,
        }
        self.seen, self.best_seen = self.renewals, self.best
        return question

    def settle(self, answer: dict[str, Any], now: float, ttl: float) -> None:
        """Keep what the look found; a renewal extends the lease by its ``lease_for``."""
        if answer.get("doubted"):
            self.doubted = str(answer["doubted"])
        if answer.get("standing"):
            self.standing = dict(answer["standing"])
        said = answer.get("probe_answer")
        if said is not None:
            self.probe_history = [*self.probe_history, said][-ev.PROBE_MEMORY :]
        if answer.get("verdict") != "renew":
            return
        evidence = answer.get("evidence")
        if evidence == ev.PROGRESS:
            self.granted, self.doubted = 0, None  # a new stall is looked at afresh
        elif evidence in ev.COUNTED:
            self.granted += 1
        lease = float(answer.get("lease_for") or ttl)
        if evidence == ev.EXTENSION:
            # never reset, not even by progress: the bounds are per operation
            self.extensions += 1
            self.extended_for += lease
        self.granted_until = now + lease
