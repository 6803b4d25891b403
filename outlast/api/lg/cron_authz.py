"""The app's ``@auth.on.crons`` handlers (``service/authz.py``) on the cron routes, as
LangGraph's server asks them: ``create`` (``CronsCreate``; what it writes into
``value["metadata"]`` is the cron's metadata), ``update``, ``delete`` (a cron its filter
leaves out is not found: 404), ``search`` (search and count: a filtered-out cron is
absent). LangGraph's clients have no call that reads one cron, so ``crons.read`` is
never asked.

A tick is no request: no handler is asked when it fires (the cron was, when it was
made). Its run is the creator's: the user who made (or last reconfigured) the cron is
kept in the run request's ``config.configurable``, where LangGraph's server puts a run's
user, so the tick's run and a factory see that user, and the thread a stateless tick
makes carries the cron's metadata, as a client's run's thread carries its stamps
(``cron_runs.py``).
"""

from __future__ import annotations

from typing import Any

from outlast.api.context import AppContext
from outlast.service.authz import Authz, Filter, configurable_of, matches, user_in
from outlast.store.crons import Cron, CronNotFound


def as_creator(ctx: AppContext, payload: dict[str, Any]) -> dict[str, Any]:
    """The run request with the caller's user in its ``configurable`` (replacing any
    the body sent: a client cannot name another user)."""
    if ctx.authz.user is None:
        return payload
    config = dict(payload.get("config") or {})
    config["configurable"] = {
        **(config.get("configurable") or {}),
        **configurable_of(ctx.authz.user),
    }
    return {**payload, "config": config}


def tick_authz(cron: Cron, app_auth: bool) -> Authz:
    """What a tick's run is accepted with: no handler (``auth`` None), the creator's
    user (None without an app ``auth.py``, or for a cron made before one)."""
    if not app_auth:
        return Authz()
    return Authz(None, user_in(cron.payload.get("config") or {}), shared=True)


async def authorized(ctx: AppContext, cron_id: str, action: str, value: dict[str, Any]) -> Cron:
    """The caller's cron, if the handler for ``action`` (asked about ``value``, which it
    may stamp) lets it through."""
    wanted = await ctx.authz.check("crons", action, value)
    current = await ctx.store.get_cron(cron_id, ctx.runs.owners.scope)
    if current is None or not matches(current.metadata, wanted):
        raise CronNotFound(f"Cron {cron_id} not found")
    return current


async def filtered(ctx: AppContext, asked: dict[str, Any]) -> Filter | None:
    """``crons.search``'s filter (None: every cron the query matches)."""
    return await ctx.authz.filter("crons", "search", asked)
