"""The cron scheduler: every worker runs one, and each tick of each cron fires once however
many there are (``CronStore.claim_crons``: the claim, the tick it fires and the cron's next
tick in one transaction, ``FOR UPDATE SKIP LOCKED`` on Postgres).

A tick's run is made by ``fire``, which the process that wires the worker gives it (the
LangGraph face's acceptance, ``api/lg/cron_runs.py``: the runtime cannot import a face),
under the tick's idempotency key (``Tick.key``). Then the tick is recorded as fired. A
process that dies between the claim and that record leaves the tick claimed; once the
claim's hold (the worker lease, ``worker_lease_ttl``) has run out, any scheduler fires it
again, and the same key gets it the run the first attempt may have made: one run per
tick, whatever dies when.

A tick whose run is refused for good (its assistant or thread is gone, the thread is busy
and the cron's strategy is ``reject``) is skipped; one that hits a passing failure (the
database, the principal's runs-in-flight limit) is left claimed and fired again after the
hold. Between claims the scheduler naps until the next tick is due (database time), at
most ``cron_interval``; a cron made or changed anywhere wakes it (``CRONS``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from outlast import faults
from outlast.config import Settings
from outlast.errors import OutlastError
from outlast.runtime import metrics
from outlast.runtime.due import serve_due
from outlast.store import CronStore
from outlast.store.crons import Tick
from outlast.store.hub import CRONS

log = logging.getLogger(__name__)

# Make the run of a tick (under ``tick.key``); its id.
FireCron = Callable[[Tick], Awaitable[str]]

_BATCH = 20


class CronScheduler:
    def __init__(self, store: CronStore, settings: Settings, fire: FireCron) -> None:
        self.store = store
        self.settings = settings
        self.fire = fire

    async def run(self) -> None:
        await serve_due(
            "cron scheduler",
            self.store.hub,
            CRONS,  # a cron made or changed anywhere may be due sooner
            lambda batch: self.store.claim_crons(batch, self.settings.worker_lease_ttl),
            self._fire,
            self.store.next_cron_in,
            lambda: self.settings.cron_interval,
            _BATCH,
        )

    async def _fire(self, tick: Tick) -> None:
        cron, at = tick.cron.cron_id, tick.at.isoformat()
        faults.fault_point(faults.CRON_BEFORE_FIRE)
        try:
            run_id = await self.fire(tick)
        except OutlastError as exc:
            if exc.retryable:
                self._retried(tick, exc)
                return
            log.warning("cron %s: the run of tick %s was refused: %s", cron, at, exc)
            metrics.CRON_TICKS.labels(outcome="refused").inc()
        except Exception as exc:
            self._retried(tick, exc)
            return
        else:
            log.info("cron %s: tick %s fired run %s", cron, at, run_id)
            metrics.CRON_TICKS.labels(outcome="fired").inc()
            faults.fault_point(faults.CRON_AFTER_FIRE)
        try:
            await self.store.cron_fired(tick)
        except Exception as exc:  # fired again later, into the same run
            log.warning("cron %s: tick %s not recorded as fired: %s", cron, at, exc)

    def _retried(self, tick: Tick, exc: Exception) -> None:
        log.warning(
            "cron %s: tick %s did not fire (%s: %s); fired again in %g s",
            tick.cron.cron_id,
            tick.at.isoformat(),
            type(exc).__name__,
            exc,
            self.settings.worker_lease_ttl,
        )
        metrics.CRON_TICKS.labels(outcome="retried").inc()
