"""The push-notification part of the store's contract: subscriptions and their outbox
(the records and errors are in ``store/outbox.py``; written once for both backends in
``store/outbox_ops.py``).

A subscription (``Webhook``) names the events it wants. Deliveries are not written by
Python: a trigger on ``outlast_events`` (migration 0012, both backends) inserts one per
matching subscription in the transaction that inserts the event, so no code path that
writes an event can forget its notification, and no notification exists for an event
that was rolled back. What the store offers here is the rest of a delivery's life:
claimed by one worker at a time (``FOR UPDATE SKIP LOCKED`` on Postgres), settled with
the attempt that was made, retried by hand once dead.
"""

from __future__ import annotations

import abc
from typing import Protocol

from outlast.store.outbox import Claimed, Delivery, NewWebhook, Outcome, Webhook


class OutboxStore(Protocol):
    # Whether new deliveries announce themselves (Postgres: the trigger's NOTIFY
    # outlast_webhooks reaches every worker); where they do not (SQLite), a deliverer
    # looks again at each run's status change, which is when most deliveries appear.
    announces_deliveries: bool = False

    @abc.abstractmethod
    async def create_webhook(self, new: NewWebhook) -> tuple[Webhook, bool]:
        """Store a subscription; its deliveries start with the next matching event.
        ``(webhook, created)``: with an ``idempotency_key`` the principal used before,
        the subscription made then (IdempotencyKeyReused if its fingerprint differs)."""

    @abc.abstractmethod
    async def get_webhook(self, webhook_id: str, principal: str = "") -> Webhook | None:
        """The principal's subscription (another principal's does not exist for it)."""

    @abc.abstractmethod
    async def list_webhooks(self, principal: str = "") -> list[Webhook]:
        """The principal's subscriptions to all its runs, oldest first."""

    @abc.abstractmethod
    async def run_webhooks(self, run_id: str) -> list[Webhook]:
        """The subscriptions to one run only (LangGraph's ``webhook``, A2A push configs)."""

    @abc.abstractmethod
    async def delete_webhook(self, webhook_id: str, principal: str = "") -> bool:
        """Delete the subscription and its deliveries; False if it did not exist."""

    @abc.abstractmethod
    async def list_deliveries(
        self, webhook_id: str, *, status: str | None = None, limit: int = 50
    ) -> list[Delivery]:
        """The subscription's deliveries, newest first, each with its attempts."""

    @abc.abstractmethod
    async def claim_deliveries(self, worker_id: str, hold: float, limit: int) -> list[Claimed]:
        """Due deliveries (pending and due, or whose claim lapsed), each taken by this
        worker for ``hold`` seconds with its attempt count raised by one. Two workers
        never claim one delivery at once."""

    @abc.abstractmethod
    async def settle_delivery(
        self,
        claimed: Claimed,
        worker_id: str,
        outcome: Outcome,
        retry_in: float | None,
    ) -> bool:
        """Record the attempt, then: delivered when ``outcome.ok``; else pending again in
        ``retry_in`` seconds, or dead when ``retry_in`` is None. The attempt is recorded
        even if the claim lapsed meanwhile (it was made); the status changes only while
        this worker still holds the claim (False otherwise: another worker has it)."""

    @abc.abstractmethod
    async def retry_delivery(self, webhook_id: str, delivery_id: str) -> Delivery:
        """A dead delivery pending again, due now (DeliveryNotFound, DeliveryNotDead)."""

    @abc.abstractmethod
    async def next_delivery_in(self) -> float | None:
        """Seconds until the next delivery is due (0 if one is), None if none waits."""

    @abc.abstractmethod
    async def count_deliveries(self) -> dict[str, int]:
        """Deliveries by status (for /metrics)."""
