"""Named fault-injection points for crash tests.

Production code calls ``fault_point("name")`` at the moments a failure would be most
harmful. Nothing happens unless the environment variable ``OUTLAST_FAULTS`` names the
point (comma-separated), which only tests set. A bare name kills the process with SIGKILL
right there, the way a machine dies: no cleanup, no finally blocks. ``name:raise`` raises
``InjectedFault`` there every time instead (a bug in that code), and ``name:raise-once``
only the first time in this process (a transient error). ``name:stall`` (at the points
awaited with ``afault_point``) says so on stderr and suspends the task there for good
while the rest of the process goes on: what the process does while one write hangs, and
what it has acknowledged when a test then kills it; ``name:stall@N`` does so the Nth time
the point is reached (a moment further into the work).
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import sys

from outlast.config import fault_spec

ENV = "OUTLAST_FAULTS"

# The points this runtime defines; tests refer to them by these names.
AFTER_CLAIM = "worker.after_claim"
BEFORE_FINISH = "worker.before_finish"
# A run claimed in its acceptance transaction, before its worker starts it: inside the
# request, which never answers (runtime/eager.py).
EAGER_START = "worker.eager_start"
# One turn of each of the worker's own loops (runtime/worker.py); the heartbeat's only
# while the worker holds runs, so that a fault there is one under leases.
CLAIM_LOOP = "worker.claim_loop"
HEARTBEAT_LOOP = "worker.heartbeat_loop"
REAPER_LOOP = "worker.reaper_loop"
RETENTION_LOOP = "worker.retention_loop"

# A cron tick claimed (runtime/scheduler.py), before its run is accepted; and after, before
# the tick is recorded as fired: either way the tick is fired again, into the same run.
CRON_BEFORE_FIRE = "cron.before_fire"
CRON_AFTER_FIRE = "cron.after_fire"

# A cancel the store has committed, before the API answers (service/runs.py): a rollback
# asked with it is the runtime's to do, whatever happens to the process that accepted it.
AFTER_CANCEL = "api.after_cancel"

# A webhook the receiver has answered, before the outbox hears of it
# (runtime/deliverer.py): the delivery is sent again, with the same id.
WEBHOOK_AFTER_SEND = "webhook.after_send"

# A group commit's batch of several runs' checkpoint writes, sent but not committed
# (store/group_commit.py): no run of the batch may have seen its write acknowledged.
BATCH_BEFORE_COMMIT = "checkpoint.batch_before_commit"

KILL = "kill"
RAISE = "raise"
RAISE_ONCE = "raise-once"
STALL = "stall"
STALLED = "outlast fault: stalled at"  # the line a stall prints, for tests to wait on

_fired: set[str] = set()
_reached: dict[str, int] = {}


class InjectedFault(RuntimeError):
    """Raised at an armed ``name:raise`` point; nothing else raises it."""


def _modes() -> dict[str, str]:
    return _parsed(fault_spec())


@functools.lru_cache(maxsize=8)
def _parsed(spec: str) -> dict[str, str]:
    modes: dict[str, str] = {}
    for entry in spec.split(","):
        name, _, mode = entry.strip().partition(":")
        if name:
            modes[name] = mode or KILL
    return modes


def armed() -> frozenset[str]:
    return frozenset(_modes())


def fault_point(name: str) -> None:
    mode = _modes().get(name)
    if mode is None:
        return
    if mode == KILL:
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == RAISE_ONCE:
        if name in _fired:
            return
        _fired.add(name)
    raise InjectedFault(f"fault injected at {name}")


async def afault_point(name: str) -> None:
    """``fault_point`` for a point inside a coroutine, where ``stall`` is possible too."""
    mode, _, nth = _modes().get(name, "").partition("@")
    if mode != STALL:
        fault_point(name)
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] < int(nth or 1):
        return
    print(f"{STALLED} {name}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()
