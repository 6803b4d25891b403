"""Waits that end by themselves: timers, deadlines with a default answer, and probes of
external jobs. Every worker runs a waker; ``due_waits`` hands each due wait to one of
them (``FOR UPDATE SKIP LOCKED``, then its ``wake_at`` is pushed ahead while it is being
handled), so a timer fires once however many workers there are, and on database time.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import logging
from typing import Any

from outlast.config import Settings
from outlast.importing import resolve
from outlast.jsonable import to_jsonable
from outlast.nodes.waits import ProbeResult
from outlast.runtime.due import serve_due
from outlast.store import Wait, WaitStore
from outlast.store.hub import WAITS

log = logging.getLogger(__name__)

_BATCH = 50


def _as_result(value: Any) -> ProbeResult:
    if isinstance(value, ProbeResult):
        return value
    if isinstance(value, dict):
        return ProbeResult(
            done=bool(value.get("done")),
            result=value.get("result"),
            detail=value.get("detail"),
            failed=bool(value.get("failed")),
        )
    raise TypeError(f"a probe must return ProbeResult or a dict, not {type(value).__name__}")


class Waker:
    def __init__(self, store: WaitStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings

    async def run(self) -> None:
        await serve_due(
            "waker",
            self.store.hub,
            WAITS,  # a newly parked wait may be due sooner than the nap
            lambda batch: self.store.due_waits(batch, hold=self._hold()),
            self._handle,
            self.store.next_due_in,
            lambda: self.settings.waker_interval,
            _BATCH,
        )

    def _hold(self) -> float:
        return max(30.0, self.settings.probe_timeout * 2)

    async def _handle(self, wait: Wait) -> None:
        try:
            if wait.kind == "external" and wait.probe:
                await self._probe(wait)
            elif wait.kind == "timer":
                await self.store.wake(
                    wait, {"woke_at": dt.datetime.now(dt.UTC).isoformat()}, "timer"
                )
            elif wait.has_default:
                await self.store.wake(wait, wait.default, "deadline")
        except Exception:
            log.exception("wait %s of run %s could not be woken", wait.id, wait.run_id)

    async def _probe(self, wait: Wait) -> None:
        probe = wait.probe or {}
        every = float(probe.get("every", 10.0))
        try:
            fn = resolve(str(probe["path"]))
            outcome = fn(probe.get("job_id"))
            if inspect.isawaitable(outcome):
                async with asyncio.timeout(self.settings.probe_timeout):
                    outcome = await outcome
            result = _as_result(outcome)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            failures = await self.store.probe_failed(wait, every, reason)
            if failures >= int(probe.get("max_failures", 3)):
                await self.store.wake(
                    wait,
                    {
                        "status": "failed",
                        "reason": f"{failures} probe failures in a row; last: {reason}",
                    },
                    "probe_failed",
                )
            return
        if result.failed:
            await self.store.wake(
                wait, {"status": "failed", "reason": str(result.detail or "job failed")}, "probe"
            )
        elif result.done:
            await self.store.wake(
                wait, {"status": "done", "result": to_jsonable(result.result)}, "probe"
            )
        else:
            await self.store.probe_ok(wait, every, to_jsonable(result.detail))
