"""The one retry policy every retrying loop asks for its delays (outlast/retry.py)."""

from __future__ import annotations

import random

import pytest

from outlast.retry import Backoff, RetryPolicy


def test_the_delay_grows_by_the_coefficient_from_the_first_interval() -> None:
    policy = RetryPolicy(initial_interval=0.5)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert RetryPolicy(1.0, backoff_coefficient=3.0).delay(3) == 9.0
    assert RetryPolicy(0.3, backoff_coefficient=1.0).delay(50) == 0.3  # a steady pace


def test_the_delay_stops_growing_at_the_maximum_interval() -> None:
    policy = RetryPolicy(initial_interval=0.1, maximum_interval=5.0)
    assert policy.delay(6) == 3.2 and policy.delay(7) == 5.0
    # a loop that retries for ever reaches the cap, never an overflow
    assert policy.delay(100_000) == 5.0
    assert RetryPolicy(1.0).delay(100_000) == float("inf")


def test_jitter_keeps_half_of_the_delay_and_draws_the_other_half() -> None:
    policy = RetryPolicy(initial_interval=2.0, maximum_interval=60.0, jitter=True)
    rng = random.Random(3)
    for attempt, full in ((1, 2.0), (4, 16.0), (30, 60.0)):
        delays = [policy.delay(attempt, rng) for _ in range(200)]
        assert all(full / 2 <= d <= full for d in delays)
        assert max(delays) - min(delays) > full / 4


def test_a_policy_that_would_wait_less_or_never_try_is_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(initial_interval=-1.0)
    with pytest.raises(ValueError):
        RetryPolicy(initial_interval=1.0, backoff_coefficient=0.5)
    with pytest.raises(ValueError):
        RetryPolicy(initial_interval=1.0, maximum_attempts=0)


def test_a_backoff_counts_failures_and_starts_over_when_reset() -> None:
    backoff = Backoff(RetryPolicy(initial_interval=0.2, maximum_interval=1.0))
    assert [backoff.next() for _ in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.reset()
    assert backoff.next() == 0.2
