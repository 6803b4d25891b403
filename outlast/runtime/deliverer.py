"""The loop that drains the outbox: every worker runs one.

It claims due deliveries (``claim_deliveries``: ``FOR UPDATE SKIP LOCKED`` on Postgres,
so workers share the outbox without sending one delivery twice at once), sends each as
its own task, at most ``webhook_concurrency`` at a time, and settles it with the attempt:
delivered on a 2xx; else pending again after an exponential backoff with jitter; dead
once the next attempt would fall past ``webhook_retry_period`` from the event.

At least once: a claim is held for the attempt's timeout and a margin; a worker that
dies mid-attempt (SIGKILL, a lost machine) leaves the delivery due again when the claim
lapses, and the next worker sends it with the same ``webhook-id``. The receiver may so
see a delivery twice, never two ids for one event. A receiver that answered after the
claim lapsed, while another worker already had it, is recorded but moves nothing.

Woken by the trigger's NOTIFY (Postgres), or by run status changes where deliveries are
not announced (SQLite: a terminal or waiting run is most of what is subscribed to), and
at least every ``webhook_poll`` seconds, or sooner when a retry is due.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Mapping
from typing import Protocol

import httpx

from outlast import faults
from outlast.config import Settings
from outlast.retry import RetryPolicy
from outlast.runtime import metrics
from outlast.secretbox import SecretBox
from outlast.store import OutboxStore
from outlast.store.hub import STATUS, WEBHOOKS, wait_for
from outlast.store.outbox import Claimed, Outcome
from outlast.webhooks import sender
from outlast.webhooks.bodies import DEFAULT, BodyMaker, BodyStore, NoBodyMaker, body_of
from outlast.webhooks.urls import UnresolvedHost, UnsafeUrl, resolve

log = logging.getLogger(__name__)

CLAIM_MARGIN = 5.0  # seconds a claim outlives the attempt's own timeout


def retry_policy(settings: Settings) -> RetryPolicy:
    """``webhook_backoff`` doubled per attempt up to ``webhook_backoff_max``, jittered so
    that deliveries that failed together (a receiver that was down) do not all come back
    at the same instant. Attempts end on the event's age (``webhook_retry_period``)."""
    return RetryPolicy(
        initial_interval=settings.webhook_backoff,
        maximum_interval=settings.webhook_backoff_max,
        jitter=True,
    )


class DelivererStore(OutboxStore, BodyStore, Protocol):
    """What delivering uses: the outbox, and what the bodies read."""


class Deliverer:
    def __init__(
        self,
        store: DelivererStore,
        settings: Settings,
        worker_id: str,
        bodies: Mapping[str, BodyMaker] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.worker_id = worker_id
        self.bodies = {**DEFAULT, **(bodies or {})}
        self._box: SecretBox | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._wake = asyncio.Event()

    @property
    def hold(self) -> float:
        return self.settings.webhook_timeout + CLAIM_MARGIN

    async def run(self) -> None:
        # Every status change woke every deliverer for two queries, for nothing where
        # new deliveries announce themselves.
        channels = (WEBHOOKS,) if self.store.announces_deliveries else (WEBHOOKS, STATUS)
        off = [
            self.store.hub.subscribe(channel, lambda _key: self._wake.set()) for channel in channels
        ]
        # Redirects are not followed; the pool is shared by every attempt of the loop.
        limits = httpx.Limits(max_connections=self.settings.webhook_concurrency)
        try:
            async with httpx.AsyncClient(follow_redirects=False, limits=limits) as client:
                await self._loop(client)
        finally:
            for unsubscribe in off:
                unsubscribe()
            for task in self._inflight:
                task.cancel()  # their claims lapse: sent again elsewhere, same id

    async def _loop(self, client: httpx.AsyncClient) -> None:
        while True:
            self._wake.clear()
            free = self.settings.webhook_concurrency - len(self._inflight)
            nap: float | None = self.settings.webhook_poll
            if free > 0:
                try:
                    claims = await self.store.claim_deliveries(self.worker_id, self.hold, free)
                    for claim in claims:
                        self._start(client, claim)
                    if len(claims) == free:
                        continue
                    nap = await self.store.next_delivery_in()
                except Exception as exc:  # the database may be down: keep going
                    log.warning("deliverer failed to claim: %s", exc)
            cap = self.settings.webhook_poll
            await wait_for(self._wake, cap if nap is None else min(max(nap, 0.01), cap))

    def _start(self, client: httpx.AsyncClient, claim: Claimed) -> None:
        task = asyncio.create_task(self._deliver(client, claim))
        self._inflight.add(task)

        def done(t: asyncio.Task[None]) -> None:
            self._inflight.discard(t)
            self._wake.set()  # a slot is free

        task.add_done_callback(done)

    async def _deliver(self, client: httpx.AsyncClient, claim: Claimed) -> None:
        try:
            outcome = await self._attempt(client, claim)
            if outcome.status_code is not None:  # the receiver answered
                faults.fault_point(faults.WEBHOOK_AFTER_SEND)
            await self._settle(claim, outcome)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Settling failed (the database): the claim lapses and the delivery is sent
            # again; never let one delivery stop the loop.
            log.exception("delivery %s could not be settled", claim.delivery.id)

    async def _attempt(self, client: httpx.AsyncClient, claim: Claimed) -> Outcome:
        settings = self.settings
        try:
            target = await resolve(claim.webhook.url, allow_private=settings.webhook_allow_private)
        except (UnsafeUrl, UnresolvedHost) as exc:
            return Outcome(None, str(exc), 0.0)
        try:
            body, own = await body_of(self.store, claim, self.bodies, settings)
            secret = self._secret(claim)
        except NoBodyMaker as exc:
            return Outcome(None, str(exc), 0.0)
        except Exception as exc:  # a body maker's bug or a gone record: an attempt that failed
            log.warning("delivery %s: no body: %r", claim.delivery.id, exc)
            return Outcome(None, f"the body could not be made: {exc!r}"[:500], 0.0)
        headers = {**own, **sender.headers_for(claim.delivery.id, body, secret)}
        return await sender.send(client, target, body, headers, settings.webhook_timeout)

    def _secret(self, claim: Claimed) -> str | None:
        if claim.webhook.secret is None:
            return None
        if self._box is None:
            self._box = SecretBox.from_settings(self.settings)
        return self._box.open(claim.webhook.secret)

    async def _settle(self, claim: Claimed, outcome: Outcome) -> None:
        delivery = claim.delivery
        retry_in: float | None = None
        if outcome.ok:
            label = "delivered"
            _observe_latency(delivery.payload)
        else:
            settings = self.settings
            delay = retry_policy(settings).delay(delivery.attempts)
            age = (dt.datetime.now(dt.UTC) - delivery.created_at).total_seconds()
            if age + delay <= settings.webhook_retry_period:
                retry_in, label = delay, "retry"
            else:
                label = "dead"
                log.warning(
                    "delivery %s to %s is dead after %d attempts: %s",
                    delivery.id,
                    claim.webhook.url,
                    delivery.attempts,
                    outcome.error,
                )
        if await self.store.settle_delivery(claim, self.worker_id, outcome, retry_in):
            metrics.WEBHOOK_ATTEMPTS.labels(outcome=label).inc()


def _observe_latency(payload: Mapping[str, object]) -> None:
    stamp = payload.get("timestamp")
    if not isinstance(stamp, str):
        return
    try:
        at = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return
    seconds = (dt.datetime.now(dt.UTC) - at).total_seconds()
    metrics.WEBHOOK_LATENCY.observe(max(0.0, seconds))
