"""The outbox's store methods, written once for both backends over ``_reading()`` /
``_writing()`` and the named queries of ``queries_webhooks.sql`` (the contract:
``contract/outbox.py``)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from outlast.errors import IdempotencyKeyReused
from outlast.store.contract.outbox import OutboxStore
from outlast.store.outbox import (
    Attempt,
    Claimed,
    Delivery,
    DeliveryNotDead,
    DeliveryNotFound,
    NewWebhook,
    Outcome,
    Webhook,
)
from outlast.store.records import NewRun
from outlast.store.tx import Tx, TxProvider, stored_time
from outlast.vocabulary import DeliveryStatus


def _webhook(tx: Tx, row: Mapping[str, Any]) -> Webhook:
    return Webhook(
        id=str(row["id"]),
        principal=row["principal"],
        url=row["url"],
        events=tuple(tx.decode_json(row["events"]) or ()),
        format=row["format"],
        secret=row["secret"],
        run_id=None if row["run_id"] is None else str(row["run_id"]),
        extra=tx.decode_json(row["extra"]) or {},
        once=bool(row["once"]),
        wait_kinds=None if row["wait_kinds"] is None else tuple(tx.decode_json(row["wait_kinds"])),
        created_at=stored_time(row["created_at"]),
        fingerprint=row["fingerprint"],
    )


def _attempt(row: Mapping[str, Any]) -> Attempt:
    return Attempt(
        n=int(row["n"]),
        at=stored_time(row["at"]),
        status_code=row["status_code"],
        error=row["error"],
        duration_ms=float(row["duration_ms"]),
        worker_id=row["worker_id"],
    )


def _delivery(tx: Tx, row: Mapping[str, Any], history: tuple[Attempt, ...] = ()) -> Delivery:
    return Delivery(
        id=str(row["id"]),
        webhook_id=str(row["webhook_id"]),
        run_id=str(row["run_id"]),
        seq=int(row["seq"]),
        type=row["type"],
        payload=tx.decode_json(row["payload"]),
        status=DeliveryStatus(row["status"]),
        attempts=int(row["attempts"]),
        next_at=stored_time(row["next_at"]),
        last_error=row["last_error"],
        created_at=stored_time(row["created_at"]),
        delivered_at=None if row["delivered_at"] is None else stored_time(row["delivered_at"]),
        history=history,
    )


async def insert_webhook(tx: Tx, new: NewWebhook) -> Webhook | None:
    """The subscription inserted, or None when its idempotency key is taken."""
    rows = await tx.rows(
        "wh_insert",
        id=str(uuid.uuid4()),
        principal=new.principal,
        run_id=new.run_id,
        url=new.url,
        events=tx.encode_json(list(new.events)),
        format=new.format,
        secret=new.secret,
        extra=tx.encode_json(new.extra),
        once=new.once,
        wait_kinds=None if new.wait_kinds is None else tx.encode_json(list(new.wait_kinds)),
        idempotency_key=new.idempotency_key,
        fingerprint=new.fingerprint,
    )
    return _webhook(tx, rows[0]) if rows else None


async def insert_run_webhooks(tx: Tx, new: NewRun) -> None:
    """The subscriptions a run is created with (``NewRun.webhooks``), in the transaction
    that creates it: a run that starts at once (eager start) and ends quickly still has
    its subscription when its first event is written."""
    for hook in new.webhooks:
        await insert_webhook(tx, dataclasses.replace(hook, run_id=new.id, principal=new.principal))


class OutboxOps(TxProvider, OutboxStore):
    async def create_webhook(self, new: NewWebhook) -> tuple[Webhook, bool]:
        async with self._writing() as tx:
            made = await insert_webhook(tx, new)
            if made is not None:
                return made, True
            rows = await tx.rows("wh_by_key", principal=new.principal, key=new.idempotency_key)
        found = _webhook(tx, rows[0])
        if found.fingerprint != new.fingerprint:
            raise IdempotencyKeyReused(
                f"Idempotency-Key {new.idempotency_key!r} was used for another subscription"
            )
        return found, False

    async def get_webhook(self, webhook_id: str, principal: str = "") -> Webhook | None:
        if not _is_uuid(webhook_id):
            return None
        async with self._reading() as tx:
            rows = await tx.rows("wh_get", id=webhook_id, principal=principal)
            return _webhook(tx, rows[0]) if rows else None

    async def list_webhooks(self, principal: str = "") -> list[Webhook]:
        async with self._reading() as tx:
            return [_webhook(tx, r) for r in await tx.rows("wh_list", principal=principal)]

    async def run_webhooks(self, run_id: str) -> list[Webhook]:
        async with self._reading() as tx:
            return [_webhook(tx, r) for r in await tx.rows("wh_of_run", run_id=run_id)]

    async def delete_webhook(self, webhook_id: str, principal: str = "") -> bool:
        if not _is_uuid(webhook_id):
            return False
        async with self._writing() as tx:
            return bool(await tx.rows("wh_delete", id=webhook_id, principal=principal))

    async def list_deliveries(
        self, webhook_id: str, *, status: str | None = None, limit: int = 50
    ) -> list[Delivery]:
        async with self._reading() as tx:
            rows = await tx.rows("dl_list", webhook_id=webhook_id, status=status, limit=limit)
            ids = [str(r["id"]) for r in rows]
            attempts: dict[str, list[Attempt]] = {i: [] for i in ids}
            if ids:
                for a in await tx.rows("dl_attempts", ids=tx.encode_json(ids)):
                    attempts[str(a["delivery_id"])].append(_attempt(a))
            return [_delivery(tx, r, tuple(attempts[str(r["id"])])) for r in rows]

    async def claim_deliveries(self, worker_id: str, hold: float, limit: int) -> list[Claimed]:
        async with self._writing() as tx:
            rows = await tx.rows("dl_claim", worker_id=worker_id, hold=hold, limit=limit)
            if not rows:
                return []
            ids = sorted({str(r["webhook_id"]) for r in rows})
            hooks = {
                w.id: w
                for w in (
                    _webhook(tx, h) for h in await tx.rows("dl_webhooks", ids=tx.encode_json(ids))
                )
            }
            found = [_delivery(tx, r) for r in rows]
            found.sort(key=lambda d: (d.next_at, d.created_at))
            return [Claimed(d, hooks[d.webhook_id]) for d in found]

    async def settle_delivery(
        self,
        claimed: Claimed,
        worker_id: str,
        outcome: Outcome,
        retry_in: float | None,
    ) -> bool:
        delivery = claimed.delivery
        if outcome.ok:
            status, error = DeliveryStatus.DELIVERED, None
        else:
            status = DeliveryStatus.PENDING if retry_in is not None else DeliveryStatus.DEAD
            error = outcome.error or f"HTTP {outcome.status_code}"
        async with self._writing() as tx:
            await tx.rows(
                "dl_attempt",
                id=delivery.id,
                n=delivery.attempts,
                status_code=outcome.status_code,
                error=outcome.error,
                duration_ms=outcome.duration_ms,
                worker_id=worker_id,
            )
            settled = await tx.rows(
                "dl_settle",
                id=delivery.id,
                worker_id=worker_id,
                n=delivery.attempts,
                status=status.value,
                error=error,
                retry_in=None if outcome.ok else retry_in,
            )
            return bool(settled)

    async def retry_delivery(self, webhook_id: str, delivery_id: str) -> Delivery:
        if not _is_uuid(delivery_id):
            raise DeliveryNotFound(f"Delivery {delivery_id} not found")
        async with self._writing() as tx:
            rows = await tx.rows("dl_get", id=delivery_id, webhook_id=webhook_id)
            if not rows:
                raise DeliveryNotFound(f"Delivery {delivery_id} not found")
            if rows[0]["status"] != DeliveryStatus.DEAD:
                raise DeliveryNotDead(
                    f"Delivery {delivery_id} is {rows[0]['status']}: only a dead one is "
                    "retried by hand (a pending one is retried by itself)"
                )
            revived = await tx.rows("dl_revive", id=delivery_id)
            return _delivery(tx, revived[0])

    async def next_delivery_in(self) -> float | None:
        async with self._reading() as tx:
            rows = await tx.rows("dl_next_due")
            seconds = rows[0]["seconds"] if rows else None
            return None if seconds is None else float(seconds)

    async def count_deliveries(self) -> dict[str, int]:
        async with self._reading() as tx:
            return {r["status"]: int(r["n"]) for r in await tx.rows("dl_count")}


def _is_uuid(value: str) -> bool:
    """Postgres refuses a malformed uuid with an error; here a malformed id is simply
    not found (SQLite's ids are made in the uuid form too)."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
