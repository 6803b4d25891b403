"""The worker's own loops, supervised (procrastinate's worker is the model).

The claim, heartbeat, reaper, waker, retention, deliverer and cron loops each catch what
they expect (a database that is down) and go on. Anything else escaping a loop is a bug
or a sick dependency; unnoticed, a dead heartbeat lets this worker's leases expire and its
runs be reaped under a worker that is still alive. So each loop runs under ``supervised``:

- a loop that raises is logged with its traceback, counted
  (``outlast_worker_loop_restarts_total{loop}``) and started again after a backoff that
  doubles with each failure in the window: 0.1 s, 0.2 s, 0.4 s, ... at most 5 s;
- a loop that fails ``max_failures`` (5) times within ``window`` (60 s) raises
  ``LoopFailed``: the worker stops (its runs drain back to the queue) and its process
  exits non-zero, so that a process supervisor (systemd, Kubernetes) replaces it.

The backoff's total before giving up (1.5 s) stays well under a worker lease
(``worker_lease_ttl``, 30 s by default): a heartbeat restarted once keeps the leases.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from outlast.retry import RetryPolicy
from outlast.runtime import metrics
from outlast.store.hub import wait_for

log = logging.getLogger(__name__)


class LoopFailed(Exception):
    """A worker loop kept failing; the worker cannot do its job and stops."""

    def __init__(self, loop: str, failures: int, window: float) -> None:
        super().__init__(f"worker loop {loop!r} failed {failures} times within {window:g} s")
        self.loop = loop


RESTART_BACKOFF = RetryPolicy(initial_interval=0.1, maximum_interval=5.0)


@dataclass(frozen=True, slots=True)
class Restarts:
    backoff: RetryPolicy = RESTART_BACKOFF
    max_failures: int = 5
    window: float = 60.0

    def delay(self, failures: int) -> float:
        """The wait before the next start, after ``failures`` failures in the window."""
        return self.backoff.delay(failures)


async def supervised(
    name: str,
    loop: Callable[[], Awaitable[None]],
    stopping: asyncio.Event,
    restarts: Restarts = Restarts(),
) -> None:
    """Run ``loop`` until it returns (a loop that ends on ``stop()``) or is cancelled;
    restart it when it raises; raise ``LoopFailed`` when it keeps failing."""
    failures: deque[float] = deque()
    while True:
        try:
            await loop()
            return
        except Exception as exc:
            now = time.monotonic()
            failures.append(now)
            while now - failures[0] > restarts.window:
                failures.popleft()
            if len(failures) >= restarts.max_failures:
                log.critical(
                    "worker loop %s failed %d times within %g s; stopping the worker",
                    name,
                    len(failures),
                    restarts.window,
                    exc_info=exc,
                )
                raise LoopFailed(name, len(failures), restarts.window) from exc
            delay = restarts.delay(len(failures))
            log.error("worker loop %s failed; restarting in %g s", name, delay, exc_info=exc)
            metrics.WORKER_LOOP_RESTARTS.labels(loop=name).inc()
            if await wait_for(stopping, delay):
                return  # stopping anyway: nothing to restart for
