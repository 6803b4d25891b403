"""The outbox's records (subscriptions, deliveries, attempts) and errors; what the store
does with them is ``OutboxStore`` (store/contract/outbox.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from outlast.errors import OutlastError
from outlast.vocabulary import DeliveryStatus


class WebhookNotFound(OutlastError):
    status = 404
    title = "Webhook not found"


class DeliveryNotFound(OutlastError):
    status = 404
    title = "Delivery not found"


class DeliveryNotDead(OutlastError):
    status = 409
    title = "Delivery is not dead"


@dataclass(frozen=True, slots=True)
class NewWebhook:
    url: str
    events: tuple[str, ...]
    principal: str = ""
    format: str = "outlast"  # the body's shape: outlast, langgraph or a2a
    secret: str | None = None  # already encrypted (outlast/secrets.py)
    run_id: str | None = None  # only this run's events
    extra: dict[str, Any] | None = None
    once: bool = False  # only the first matching event
    # run.waiting only when the run waits on one of these kinds (None: on any)
    wait_kinds: tuple[str, ...] | None = None
    idempotency_key: str | None = None
    fingerprint: str | None = None  # of the request: a key reused with another is refused


@dataclass(frozen=True, slots=True)
class Webhook:
    id: str
    principal: str
    url: str
    events: tuple[str, ...]
    format: str
    secret: str | None  # encrypted
    run_id: str | None
    extra: dict[str, Any]
    once: bool
    wait_kinds: tuple[str, ...] | None
    created_at: dt.datetime
    fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class Attempt:
    n: int
    at: dt.datetime
    status_code: int | None
    error: str | None
    duration_ms: float
    worker_id: str


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    webhook_id: str
    run_id: str
    seq: int
    type: str
    payload: dict[str, Any]
    status: DeliveryStatus
    attempts: int
    next_at: dt.datetime
    last_error: str | None
    created_at: dt.datetime
    delivered_at: dt.datetime | None
    history: tuple[Attempt, ...] = ()


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery this worker may attempt now (attempt number ``delivery.attempts``),
    with the subscription it goes to."""

    delivery: Delivery
    webhook: Webhook


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one attempt gave: the receiver's status code, or why there was none."""

    status_code: int | None
    error: str | None
    duration_ms: float

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def as_tuple(events: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(events))
