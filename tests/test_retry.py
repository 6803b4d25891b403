"""The one retry policy every retrying loop asks for its delays (outlast/retry.py)."""

from __future__ import annotations

import random
from typing import cast

import pytest

from outlast.retry import Backoff, RetryPolicy
from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, EventStore, Lease


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


def test_maximum_attempts_counts_the_first() -> None:
    policy = RetryPolicy(initial_interval=1.0, maximum_attempts=3)
    assert [policy.allows(n) for n in (1, 2, 3, 4)] == [True, True, True, False]
    assert RetryPolicy(initial_interval=1.0).allows(10**9)  # None: no end


def test_a_backoff_counts_failures_and_starts_over_when_reset() -> None:
    backoff = Backoff(RetryPolicy(initial_interval=0.2, maximum_interval=1.0))
    assert [backoff.next() for _ in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.reset()
    assert backoff.next() == 0.2


class _Flaky:
    """An event store whose append fails ``failures`` times, then works; it keeps the
    token of each attempt."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.tokens: list[str | None] = []

    async def append(self, lease: Lease, batch: list[EventDraft], token: str | None = None) -> int:
        self.calls += 1
        self.tokens.append(token)
        if self.calls <= self.failures:
            raise ConnectionError("the connection dropped")
        return len(batch)


async def test_the_sink_retries_a_failed_append_by_its_policy() -> None:
    lease = Lease("run", "worker", 1)
    flaky = _Flaky(failures=4)  # the fifth and last attempt works
    sink = EventSink(cast(EventStore, flaky), lease, on_error=lambda exc: None)
    assert await sink._write([EventDraft("custom", {})], "t-1") == 1
    assert flaky.calls == 5
    assert flaky.tokens == ["t-1"] * 5  # every attempt of the batch is the same batch
    hopeless = _Flaky(failures=5)
    sink = EventSink(cast(EventStore, hopeless), lease, on_error=lambda exc: None)
    with pytest.raises(ConnectionError):
        await sink._write([EventDraft("custom", {})], "t-2")
    assert hopeless.calls == 5
