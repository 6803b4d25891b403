"""How long to wait before trying again: one policy for every retry in outlast.

Modelled on Temporal's ``RetryPolicy``: the first wait, a coefficient it is multiplied by
after each failure, a cap, and (where many callers fail together) jitter. Each place that
retries states its numbers as one ``RetryPolicy`` and asks it for the delay of attempt n;
the loop around it (what counts as a failure, when to give up) stays where it is, because
that is the part that differs: a worker loop gives up on failures within a window, a
webhook on the age of its event, a terminal client never.

``Backoff`` is the counter for loops that retry until something works and then start
over (a reconnecting client, a listener).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    initial_interval: float  # seconds before the second attempt
    backoff_coefficient: float = 2.0  # each wait is this many times the one before
    maximum_interval: float | None = None  # no wait is longer than this (None: no cap)
    maximum_attempts: int | None = None  # attempts in all, the first included (None: no end)
    # "Equal jitter": half of each wait fixed, half random, so that callers that failed
    # together (a receiver that was down) do not all come back at the same instant.
    jitter: bool = False

    def __post_init__(self) -> None:
        if self.initial_interval < 0 or self.backoff_coefficient < 1:
            raise ValueError("a retry waits 0 s or more, and never less than the time before")
        if self.maximum_attempts is not None and self.maximum_attempts < 1:
            raise ValueError("maximum_attempts counts the first attempt: at least 1")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after attempt ``attempt`` (1 for the first) failed, before the
        next one: ``initial_interval × backoff_coefficient^(attempt-1)``, capped."""
        try:
            full = self.initial_interval * self.backoff_coefficient ** max(0, attempt - 1)
        except OverflowError:  # a caller retrying for ever reaches the cap, not a crash
            full = float("inf")
        if self.maximum_interval is not None:
            full = min(full, self.maximum_interval)
        if not self.jitter:
            return float(full)
        return full / 2 + (rng or random).uniform(0, full / 2)

    def allows(self, attempt: int) -> bool:
        """Whether attempt ``attempt`` (1 for the first) may be made."""
        return self.maximum_attempts is None or attempt <= self.maximum_attempts


class Backoff:
    """The waits of one retrying loop: each ``next()`` is the policy's next delay;
    ``reset()`` once the thing tried works again, so the next failure starts over."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self._failures = 0

    def next(self) -> float:
        self._failures += 1
        return self.policy.delay(self._failures)

    def reset(self) -> None:
        self._failures = 0
