"""A2A push notification configs, delivered through the outbox like every webhook.

A config is a subscription to its task's run only (format ``a2a``): to the moments its
state changes for a client (it asks something, it ends). Its body is A2A's
``StreamResponse`` with the task as it is when sent (``{"task": …}``), with the config's
``token`` in ``X-A2A-Notification-Token`` and its ``authentication`` as ``Authorization``,
as the SDK's own sender posts them; at least once, retried, dead-lettered and recorded
like any delivery (``GET /v1/webhooks`` does not list them: they belong to a task). The
token and the credentials are stored sealed (``secretbox.py``).
"""

from __future__ import annotations

from typing import Any

from a2a.types import (
    AuthenticationInfo,
    InvalidParamsError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
)
from google.protobuf.json_format import MessageToDict

from outlast.api.a2a.tasks import task_of
from outlast.api.context import AppContext
from outlast.config import Settings
from outlast.secretbox import SecretBox
from outlast.service.standing import open_waits
from outlast.store import Run
from outlast.store.outbox import Claimed, NewWebhook, Webhook
from outlast.vocabulary import ANSWERABLE_KINDS, EventType
from outlast.webhooks.bodies import Body, BodyStore
from outlast.webhooks.urls import UnsafeUrl, check_url

FORMAT = "a2a"
EVENTS = (
    EventType.RUN_WAITING,
    EventType.RUN_COMPLETED,
    EventType.RUN_FAILED,
    EventType.RUN_CANCELLED,
)


async def create(ctx: AppContext, run: Run, config: TaskPushNotificationConfig) -> Any:
    try:
        check_url(config.url, allow_private=ctx.settings.webhook_allow_private)
    except UnsafeUrl as exc:
        raise InvalidParamsError(message=f"url: {exc}") from None
    config_id = config.id or run.id
    await delete(ctx, run, config_id)  # a config set again replaces the one of its id
    box = SecretBox.from_settings(ctx.settings)
    extra: dict[str, Any] = {"config_id": config_id}
    if config.token:
        extra["token"] = box.seal(config.token)
    if config.HasField("authentication"):
        extra["scheme"] = config.authentication.scheme
        extra["credentials"] = box.seal(config.authentication.credentials)
    await ctx.store.create_webhook(
        NewWebhook(
            url=config.url,
            events=EVENTS,
            principal=ctx.principal,
            format=FORMAT,
            run_id=run.id,
            extra=extra,
            wait_kinds=tuple(sorted(ANSWERABLE_KINDS)),
        )
    )
    return _view(run.id, await _find(ctx, run, config_id))


async def listed(ctx: AppContext, run: Run) -> list[TaskPushNotificationConfig]:
    return [_view(run.id, hook) for hook in await _configs(ctx, run)]


async def get(ctx: AppContext, run: Run, config_id: str) -> TaskPushNotificationConfig:
    return _view(run.id, await _find(ctx, run, config_id or run.id))


async def delete(ctx: AppContext, run: Run, config_id: str) -> None:
    for hook in await _configs(ctx, run):
        if hook.extra.get("config_id") == (config_id or run.id):
            await ctx.store.delete_webhook(hook.id, ctx.principal)


async def _configs(ctx: AppContext, run: Run) -> list[Webhook]:
    hooks = await ctx.store.run_webhooks(run.id)
    return [h for h in hooks if h.format == FORMAT and h.principal == ctx.principal]


async def _find(ctx: AppContext, run: Run, config_id: str) -> Webhook:
    for hook in await _configs(ctx, run):
        if hook.extra.get("config_id") == config_id:
            return hook
    raise TaskNotFoundError(message=f"no push notification config {config_id!r} on {run.id}")


def _view(task_id: str, hook: Webhook) -> TaskPushNotificationConfig:
    """The config as a client set it, less its secrets (never shown again)."""
    view = TaskPushNotificationConfig(task_id=task_id, id=hook.extra["config_id"], url=hook.url)
    if "scheme" in hook.extra:
        view.authentication.CopyFrom(AuthenticationInfo(scheme=hook.extra["scheme"]))
    return view


async def body(store: BodyStore, claimed: Claimed, settings: Settings) -> Body:
    """The ``a2a`` body: the task now, as a ``StreamResponse``, and the config's headers."""
    run = await store.get_run(claimed.delivery.run_id)
    if run is None:
        raise LookupError(f"the task of delivery {claimed.delivery.id} is gone")
    waits = await open_waits(store, run)
    headers: dict[str, str] = {}
    extra = claimed.webhook.extra
    box = SecretBox.from_settings(settings)
    if "token" in extra:
        headers["x-a2a-notification-token"] = box.open(extra["token"])
    if "credentials" in extra:
        headers["authorization"] = f"{extra['scheme']} {box.open(extra['credentials'])}"
    return Body({"task": MessageToDict(task_of(run, waits))}, headers)
