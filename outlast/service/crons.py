"""The cron service: what a cron request decides, once, behind the faces (the LangGraph
face's ``/runs/crons``), and the run a cron's tick makes.

A cron is a run request (``payload``) and when to make it. The request is checked when
the cron is made or changed, as the acceptance of its runs will check it; a tick's run is
accepted from it by the face's own acceptance, the one every client's run goes through.
Both are the face's to do (they read its request shapes), so the service is handed them:
``Check`` when a cron is made or changed, ``MakeRun`` when a tick fires. The service
decides the rest: whose thread and cron it is, the schedule (``InvalidCron``, 422, naming
the field), the app's handlers, whose user a tick runs as, and what its run carries.

The app's ``@auth.on.crons`` handlers (``service/authz.py``) are asked as LangGraph's
server asks them: ``create`` (what it writes into ``value["metadata"]`` is the cron's
metadata), ``update``, ``delete`` (a cron its filter leaves out is not found: 404),
``search`` (search and count: a filtered-out cron is absent). LangGraph's clients have no
call that reads one cron, so ``crons.read`` is never asked.

A tick is no request: no handler is asked when it fires (the cron was, when it was made).
Its run is the creator's: the user who made (or last reconfigured) the cron is kept in the
run request's ``config.configurable``, where LangGraph's server puts a run's user, so the
tick's run and a factory see that user, and the thread a stateless tick makes carries the
cron's metadata, as a client's run's thread carries its stamps.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from outlast.errors import InvalidCron, ThreadNotFound
from outlast.graph.registry import GraphRegistry
from outlast.service.assistants import AssistantService
from outlast.service.authz import NOBODY, Authz, Filter, configurable_of, matches, user_in
from outlast.service.owners import Owners
from outlast.store import Store, schedule
from outlast.store.base import Assistant
from outlast.store.crons import Cron, CronNotFound, CronQuery, NewCron, Tick

# The fields of a cron's body that make its runs (its ``payload``); the assistant and the
# metadata are the cron's own.
RUN_FIELDS = frozenset(
    {
        "input",
        "config",
        "context",
        "stream_mode",
        "stream_subgraphs",
        "stream_resumable",
        "checkpoint_during",
        "durability",
        "interrupt_before",
        "interrupt_after",
        "multitask_strategy",
        "webhook",
        "feedback_keys",
    }
)
# A search read whole, to match the app's filter in Python (its operators are not the
# store's): the principal's crons, as thread searches read the principal's threads.
EVERY = 1_000_000

# The run request of a cron (its assistant, its payload), checked as the face's
# acceptance will check its runs; the assistant it runs.
Check = Callable[[str, Mapping[str, Any]], Awaitable[Assistant]]


@dataclass(frozen=True, slots=True)
class TickRun:
    """The run a tick makes: the cron's run request, accepted as its creator would have
    it accepted (``principal``, ``authz``: the creator's user, no handler asked), under
    the tick's idempotency key (a tick fired twice gets one run)."""

    principal: str
    authz: Authz
    thread_id: str | None  # None: a stateless run, on a thread of its own
    assistant_id: str
    payload: dict[str, Any]
    metadata: dict[str, Any]
    on_completion: str | None
    key: str


# The face's acceptance of a tick's run; its (LangGraph) run id.
MakeRun = Callable[[TickRun], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class CronDraft:
    """A new cron as a client asks for it: the run request (``assistant_id``, ``payload``:
    the fields of ``RUN_FIELDS`` it gave) and when to make it."""

    assistant_id: str
    schedule: str
    payload: dict[str, Any]
    timezone: str | None = None
    end_time: dt.datetime | None = None
    enabled: bool = True
    on_run_completed: str | None = None  # stateless: "delete" (the default) or "keep"
    metadata: dict[str, Any] | None = None


def tick_authz(cron: Cron, app_auth: bool) -> Authz:
    """What a tick's run is accepted with: no handler (``auth`` None), the creator's
    user (None without an app ``auth.py``, or for a cron made before one)."""
    if not app_auth:
        return Authz()
    return Authz(None, user_in(cron.payload.get("config") or {}), shared=True)


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    """A time without a zone is UTC, as LangGraph's server reads it."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.UTC)


def _check_schedule(expression: str, timezone: str | None) -> None:
    try:
        schedule.check(expression, timezone, dt.datetime.now(dt.UTC))
    except schedule.BadSchedule as exc:
        raise InvalidCron(f"{exc.field}: {exc}") from None


@dataclass(frozen=True, slots=True)
class CronService:
    """Crons as one caller (``principal``, and the app's handlers for it) sees them."""

    store: Store
    registry: GraphRegistry
    principal: str = ""
    authz: Authz = NOBODY

    @property
    def owners(self) -> Owners:
        return Owners(self.store, self.principal, self.authz)

    @property
    def assistants(self) -> AssistantService:
        return AssistantService(self.store, self.registry, self.principal, self.authz)

    # -- changing --------------------------------------------------------------------

    async def create(self, thread_id: str | None, draft: CronDraft, check: Check) -> Cron:
        """A cron whose runs go to ``thread_id`` (the caller's: else ``ThreadNotFound``),
        or, None, each to a new thread (deleted after the run unless ``keep``). Nothing is
        stored when the schedule, the run request or the handler refuses."""
        if thread_id is not None and await self.owners.thread(thread_id) is None:
            raise ThreadNotFound(f"Thread with ID {thread_id} not found")
        _check_schedule(draft.schedule, draft.timezone)
        assistant = await check(draft.assistant_id, draft.payload)
        cron_id = str(uuid.uuid4())
        asked: dict[str, Any] = {
            "payload": draft.payload,
            "schedule": draft.schedule,
            "cron_id": cron_id,
            "thread_id": thread_id,
            "user_id": self.principal or None,
            "end_time": draft.end_time,
            "metadata": dict(draft.metadata or {}),
        }
        await self.authz.check("crons", "create", asked)  # may stamp the metadata
        return await self.store.create_cron(
            NewCron(
                cron_id=cron_id,
                principal=self.principal,
                assistant_id=assistant.assistant_id,
                thread_id=thread_id,
                schedule=draft.schedule,
                timezone=draft.timezone,
                payload=self._as_creator(draft.payload),
                metadata=dict(asked.get("metadata") or {}),
                enabled=draft.enabled,
                end_time=_aware(draft.end_time),
                on_run_completed=None if thread_id else draft.on_run_completed or "delete",
            )
        )

    async def update(self, cron_id: str, given: Mapping[str, Any], check: Check) -> Cron:
        """Change the fields a client sent (``given``): ``end_time: None`` clears it,
        other Nones are as if the field were absent, ``metadata`` is merged into the
        cron's. A new schedule, time zone, end time or ``enabled`` re-plans the next tick
        from now; the run request, changed, is checked again."""
        metadata = dict(given.get("metadata") or {})
        asked = {**given, "cron_id": cron_id, "metadata": metadata}
        current = await self._authorized(cron_id, "update", asked)  # may stamp the metadata
        changes = {k: v for k, v in given.items() if v is not None and k not in RUN_FIELDS}
        if asked["metadata"]:
            changes["metadata"] = asked["metadata"]
        if "end_time" in given:  # null clears it
            changes["end_time"] = _aware(given["end_time"])
        if current.thread_id is not None:
            changes.pop("on_run_completed", None)  # a thread's cron keeps its thread
        if "schedule" in changes or "timezone" in changes:
            _check_schedule(
                changes.get("schedule", current.schedule), changes.get("timezone", current.timezone)
            )
        runs = {k: v for k, v in given.items() if v is not None and k in RUN_FIELDS}
        if runs:
            await check(current.assistant_id, {**current.payload, **runs})
            changes["payload"] = self._as_creator(runs) if "config" in runs else runs
        return await self.store.update_cron(current.cron_id, changes, self.owners.scope)

    async def delete(self, cron_id: str) -> None:
        await self._authorized(cron_id, "delete", {"cron_id": cron_id})
        await self.store.delete_cron(cron_id, self.owners.scope)

    # -- reading ---------------------------------------------------------------------

    async def search(
        self,
        *,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> tuple[list[Cron], int]:
        """The caller's crons, one page, and how many match in all."""
        wanted, metadata = await self._filter(assistant_id, thread_id, metadata, limit, offset)
        where = await self._query(assistant_id, thread_id, enabled, metadata)
        if wanted is None:
            found = await self.store.search_crons(
                where, limit=limit, offset=offset, sort_by=sort_by, sort_order=sort_order
            )
            return found, await self.store.count_crons(where)
        # matched here: the store's metadata filter has no operators
        every = await self.store.search_crons(
            where, limit=EVERY, sort_by=sort_by, sort_order=sort_order
        )
        every = [c for c in every if matches(c.metadata, wanted)]
        return every[offset : offset + limit], len(every)

    async def count(
        self,
        *,
        assistant_id: str | None = None,
        thread_id: str | None = None,
        enabled: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> int:
        wanted, metadata = await self._filter(assistant_id, thread_id, metadata, 0, 0)
        where = await self._query(assistant_id, thread_id, enabled, metadata)
        if wanted is None:
            return await self.store.count_crons(where)
        every = await self.store.search_crons(where, limit=EVERY)
        return sum(1 for c in every if matches(c.metadata, wanted))

    # -- firing ----------------------------------------------------------------------

    async def fire(self, tick: Tick, make: MakeRun) -> str:
        """Make ``tick``'s run through the face's acceptance (``make``), as the cron's
        creator: the caller this service is bound to plays no part (a tick is no
        request). Its run is the cron's request, with the cron's metadata and id, and the
        stateless cron's ``on_run_completed``."""
        cron = tick.cron
        return await make(
            TickRun(
                principal=cron.principal,
                authz=tick_authz(cron, self.registry.app_auth),
                thread_id=cron.thread_id,
                assistant_id=cron.assistant_id,
                payload=cron.payload,
                metadata={**cron.metadata, "cron_id": cron.cron_id},
                on_completion=cron.on_run_completed,
                key=tick.key,
            )
        )

    # -- the rules -------------------------------------------------------------------

    def _as_creator(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The run request with the caller's user in its ``configurable`` (replacing any
        the body sent: a client cannot name another user)."""
        if self.authz.user is None:
            return dict(payload)
        config = dict(payload.get("config") or {})
        config["configurable"] = {
            **(config.get("configurable") or {}),
            **configurable_of(self.authz.user),
        }
        return {**payload, "config": config}

    async def _authorized(self, cron_id: str, action: str, value: dict[str, Any]) -> Cron:
        """The caller's cron, if the handler for ``action`` (asked about ``value``, which
        it may stamp) lets it through."""
        wanted = await self.authz.check("crons", action, value)
        current = await self.store.get_cron(cron_id, self.owners.scope)
        if current is None or not matches(current.metadata, wanted):
            raise CronNotFound(f"Cron {cron_id} not found")
        return current

    async def _filter(
        self,
        assistant_id: str | None,
        thread_id: str | None,
        metadata: Mapping[str, Any] | None,
        limit: int,
        offset: int,
    ) -> tuple[Filter | None, Mapping[str, Any] | None]:
        """``crons.search``'s filter (None: every cron the query matches), and the
        metadata to search by: the handler's ``value["metadata"]``, as LangGraph's server
        asks it (a dict, {} when the query has none; ``limit`` and ``offset`` 0 for a
        count) and searches by it (what the handler wrote there narrows the search)."""
        asked: dict[str, Any] = {
            "assistant_id": assistant_id,
            "thread_id": thread_id,
            "limit": limit,
            "offset": offset,
            "metadata": dict(metadata or {}),
        }
        wanted = await self.authz.filter("crons", "search", asked)
        searched = asked.get("metadata")
        return wanted, dict(searched) if isinstance(searched, Mapping) and searched else None

    async def _query(
        self,
        assistant_id: str | None,
        thread_id: str | None,
        enabled: bool | None,
        metadata: Mapping[str, Any] | None,
    ) -> CronQuery:
        """The caller's crons the filter means. A graph name stands for its system
        assistant; an unknown assistant id matches nothing."""
        if assistant_id is not None:
            found = await self.assistants.lookup(assistant_id)
            assistant_id = found.assistant_id if found is not None else assistant_id
        return CronQuery(self.owners.scope, assistant_id, thread_id, enabled, metadata)
