"""Push subscriptions: ``/v1/webhooks`` (create, list, get, delete) and their deliveries.

A subscription belongs to the principal that made it and hears the events it names of
every run of that principal. Its signing secret is the client's (``whsec_…``, as
Standard Webhooks writes them) or one made here; it is stored encrypted
(``secretbox.py``) and shown once, in the answer to the create that made it (and to a
retry of that create with the same ``Idempotency-Key``), never in a listing.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from outlast.api.a2a import push as a2a_push
from outlast.api.document import declared
from outlast.api.edge import Ctx, IdempotencyKey
from outlast.api.lg import webhook as lg_webhook
from outlast.runtime.accept import fingerprint
from outlast.secretbox import SecretBox
from outlast.store.outbox import Delivery, NewWebhook, Webhook, WebhookNotFound
from outlast.vocabulary import DeliveryStatus, WaitKind, WebhookEvent
from outlast.webhooks.bodies import BodyMaker
from outlast.webhooks.urls import MAX_URL, URL_PATTERN, check_url

router = APIRouter(prefix="/v1", tags=["webhooks"])
# The bodies of the faces' own formats, which the runtime's deliverer cannot make itself
# (webhooks/bodies.py): every process with a worker is given them.
BODIES: dict[str, BodyMaker] = {lg_webhook.FORMAT: lg_webhook.body, a2a_push.FORMAT: a2a_push.body}

ID = Path(description="a subscription's id", json_schema_extra={"format": "uuid"})
SECRET_PREFIX = "whsec_"
# base64 of 24 to 62 bytes, in whole groups and correctly padded
SECRET_PATTERN = r"^(whsec_)?(?:[A-Za-z0-9+/]{4}){8,20}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        max_length=MAX_URL,
        pattern=URL_PATTERN,
        description="https, to a public address (OUTLAST_WEBHOOK_ALLOW_PRIVATE: any)",
    )
    events: list[WebhookEvent] = Field(min_length=1, max_length=len(WebhookEvent))
    secret: str | None = Field(
        default=None,
        pattern=SECRET_PATTERN,
        description="whsec_ and 24 to 62 bytes in base64 (Standard Webhooks); made here "
        "when absent, and then shown once in the answer",
    )
    wait_kinds: list[WaitKind] | None = Field(
        default=None, description="run.waiting only for these kinds of wait (all if absent)"
    )

    @field_validator("secret")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value is None:
            return None
        raw = value.removeprefix(SECRET_PREFIX)
        try:
            size = len(base64.b64decode(raw, validate=True))
        except (binascii.Error, ValueError):
            raise ValueError("the secret must be whsec_ followed by base64") from None
        if not 24 <= size <= 62:
            raise ValueError(f"the secret must be 24 to 62 bytes (this one is {size})")
        return value if value.startswith(SECRET_PREFIX) else SECRET_PREFIX + raw


class WebhookView(BaseModel):
    id: str
    url: str
    events: list[str]
    wait_kinds: list[str] | None
    signed: bool = Field(description="its deliveries carry webhook-signature")
    created_at: dt.datetime
    secret: str | None = Field(
        default=None, description="only in the answer to the create that made it"
    )

    @classmethod
    def of(cls, hook: Webhook, secret: str | None = None) -> WebhookView:
        return cls(
            id=hook.id,
            url=hook.url,
            events=list(hook.events),
            wait_kinds=None if hook.wait_kinds is None else list(hook.wait_kinds),
            signed=hook.secret is not None,
            created_at=hook.created_at,
            secret=secret,
        )


class WebhookList(BaseModel):
    webhooks: list[WebhookView]


class AttemptView(BaseModel):
    n: int
    at: dt.datetime
    status_code: int | None
    error: str | None
    duration_ms: float


class DeliveryView(BaseModel):
    id: str = Field(description="the webhook-id header of every attempt")
    run_id: str
    seq: int
    type: str
    status: DeliveryStatus
    attempts: int
    next_at: dt.datetime | None = Field(description="when it is tried next, if it is")
    last_error: str | None
    created_at: dt.datetime
    delivered_at: dt.datetime | None
    payload: dict[str, Any]
    history: list[AttemptView]

    @classmethod
    def of(cls, d: Delivery) -> DeliveryView:
        waiting = d.status in (DeliveryStatus.PENDING, DeliveryStatus.DELIVERING)
        return cls(
            id=d.id,
            run_id=d.run_id,
            seq=d.seq,
            type=d.type,
            status=d.status,
            attempts=d.attempts,
            next_at=d.next_at if waiting else None,
            last_error=d.last_error,
            created_at=d.created_at,
            delivered_at=d.delivered_at,
            payload=d.payload,
            history=[
                AttemptView(
                    n=a.n,
                    at=a.at,
                    status_code=a.status_code,
                    error=a.error,
                    duration_ms=a.duration_ms,
                )
                for a in d.history
            ],
        )


class DeliveryList(BaseModel):
    deliveries: list[DeliveryView]


@router.post("/webhooks", status_code=201, response_model=WebhookView, responses=declared(422))
async def create_webhook(
    ctx: Ctx, body: WebhookCreate, response: Response, idempotency_key: IdempotencyKey
) -> WebhookView:
    """Subscribe to the events of every run of the caller. ``422`` for a URL outlast does
    not send to (only https to public addresses, unless the operator allows private
    ones), an unknown event or a malformed secret. With ``Idempotency-Key``, a retry gets
    the same subscription (``200``, ``Idempotent-Replayed: true``)."""
    check_url(body.url, allow_private=ctx.settings.webhook_allow_private)
    made = body.secret is None
    secret = body.secret or SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
    box = SecretBox.from_settings(ctx.settings)
    request = body.model_dump(exclude={"secret"})
    if body.secret is not None:  # a digest of it, so that another secret is another request
        request["secret_sha256"] = hashlib.sha256(body.secret.encode()).hexdigest()
    hook, created = await ctx.store.create_webhook(
        NewWebhook(
            url=body.url,
            events=tuple(dict.fromkeys(body.events)),
            principal=ctx.principal,
            secret=box.seal(secret),
            wait_kinds=None if body.wait_kinds is None else tuple(body.wait_kinds),
            idempotency_key=idempotency_key,
            fingerprint=fingerprint(request),
        )
    )
    response.headers["Location"] = f"/v1/webhooks/{hook.id}"
    if not created:
        response.status_code = 200
        response.headers["Idempotent-Replayed"] = "true"
        secret = box.open(hook.secret) if hook.secret else secret
    return WebhookView.of(hook, secret if made else None)


@router.get("/webhooks", response_model=WebhookList)
async def list_webhooks(ctx: Ctx) -> WebhookList:
    """The caller's subscriptions, oldest first (their secrets are never shown)."""
    return WebhookList(
        webhooks=[WebhookView.of(h) for h in await ctx.store.list_webhooks(ctx.principal)]
    )


async def _mine(ctx: Ctx, webhook_id: str) -> Webhook:
    hook = await ctx.store.get_webhook(webhook_id, ctx.principal)
    if hook is None:
        raise WebhookNotFound(f"Webhook {webhook_id} not found")
    return hook


@router.get("/webhooks/{webhook_id}", response_model=WebhookView, responses=declared(404))
async def get_webhook(ctx: Ctx, webhook_id: Annotated[str, ID]) -> WebhookView:
    return WebhookView.of(await _mine(ctx, webhook_id))


@router.delete("/webhooks/{webhook_id}", status_code=204, responses=declared(404))
async def delete_webhook(ctx: Ctx, webhook_id: Annotated[str, ID]) -> Response:
    """Unsubscribe; the deliveries not yet made are dropped with it."""
    if not await ctx.store.delete_webhook(webhook_id, ctx.principal):
        raise WebhookNotFound(f"Webhook {webhook_id} not found")
    return Response(status_code=204)


@router.get(
    "/webhooks/{webhook_id}/deliveries", response_model=DeliveryList, responses=declared(404)
)
async def list_deliveries(
    ctx: Ctx,
    webhook_id: Annotated[str, ID],
    status: DeliveryStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> DeliveryList:
    """The subscription's deliveries, newest first, each with every attempt made."""
    hook = await _mine(ctx, webhook_id)
    found = await ctx.store.list_deliveries(hook.id, status=status, limit=limit)
    return DeliveryList(deliveries=[DeliveryView.of(d) for d in found])


@router.post(
    "/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
    status_code=202,
    response_model=DeliveryView,
    responses=declared(404, 409),
)
async def retry_delivery(
    ctx: Ctx,
    webhook_id: Annotated[str, ID],
    delivery_id: Annotated[str, Path(json_schema_extra={"format": "uuid"})],
) -> DeliveryView:
    """Try a dead delivery again, now, with the same id (``409`` if it is not dead: a
    pending one is retried by itself, a delivered one was delivered)."""
    hook = await _mine(ctx, webhook_id)
    return DeliveryView.of(await ctx.store.retry_delivery(hook.id, delivery_id))
