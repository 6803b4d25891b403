"""Crons of the LangGraph face (``langgraph_sdk``'s ``client.crons``): runs made on a
schedule, on a thread (``POST /threads/{thread_id}/runs/crons``) or each on a new thread
(``POST /runs/crons``); search, count, update and delete under ``/runs/crons``.

A cron is a run request and when to make it; what a request to these routes does is the
cron service's (``service/crons.py``), and these routes translate. The request
(``payload``) is checked when the cron is made, as the acceptance of its runs will check
it (``accept.checked``: its assistant, stream modes, config), and each tick's run is
accepted from it by the same code as a client's (``cron_runs.py``). Bad input changes
nothing: an unknown ``schedule`` or ``timezone`` (or one that never fires) is a 422 that
names the field, an unknown assistant 422, another principal's thread or cron 404.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Path, Request, Response
from pydantic import Field, field_validator

from outlast.api.context import AppContext
from outlast.api.edge import ThreadId, ctx_of
from outlast.api.lg.accept import checked
from outlast.api.lg.cron_runs import run_request
from outlast.api.lg.schemas import Offset, RunCreate, _Lenient
from outlast.service.crons import RUN_FIELDS, Check, CronDraft
from outlast.store import Assistant, schedule
from outlast.store.crons import Cron

router = APIRouter(tags=["langgraph"])
CronId = Annotated[str, Path(max_length=100)]
Schedule = Annotated[str, Field(min_length=1, max_length=200)]
TimeZone = Annotated[str, Field(min_length=1, max_length=100)]
SortBy = Literal[
    "cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time"
]
SelectField = Literal[
    "cron_id",
    "assistant_id",
    "thread_id",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "now",
    "on_run_completed",
    "enabled",
]


def _schedule(value: str | None) -> str | None:
    if value is not None and not schedule.readable(value):
        raise ValueError(f"not a cron expression: {value!r}")
    return value


def _timezone(value: str | None) -> str | None:
    if value is not None:
        try:
            schedule.zone(value)
        except schedule.BadSchedule as exc:
            raise ValueError(str(exc)) from None
    return value


class CronCreate(RunCreate):
    """A run request (the fields of ``RunCreate`` that make a run; the others are ignored)
    and when to make it."""

    schedule: Schedule
    timezone: TimeZone | None = None
    end_time: dt.datetime | None = None
    enabled: bool = True
    on_run_completed: Literal["delete", "keep"] | None = None

    _check_schedule = field_validator("schedule")(_schedule)
    _check_timezone = field_validator("timezone")(_timezone)


class CronPatch(_Lenient):
    """What an update may change. ``end_time: null`` clears it; other nulls are as if the
    field were absent; ``metadata`` is merged into the cron's."""

    schedule: Schedule | None = None
    timezone: TimeZone | None = None
    end_time: dt.datetime | None = None
    enabled: bool | None = None
    on_run_completed: Literal["delete", "keep"] | None = None
    metadata: dict[str, Any] | None = None
    # the run request's fields (RunCreate's types)
    input: dict[str, Any] | list[Any] | None = None
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    webhook: str | None = None
    interrupt_before: Literal["*"] | list[str] | None = None
    interrupt_after: Literal["*"] | list[str] | None = None
    stream_mode: str | list[str] | None = None
    stream_subgraphs: bool | None = None
    stream_resumable: bool | None = None
    durability: Literal["sync", "async", "exit"] | None = None
    multitask_strategy: Literal["reject", "interrupt", "rollback", "enqueue"] | None = None

    _check_schedule = field_validator("schedule")(_schedule)
    _check_timezone = field_validator("timezone")(_timezone)


class CronCount(_Lenient):
    assistant_id: str | None = Field(default=None, max_length=200)
    thread_id: str | None = Field(default=None, max_length=200)
    enabled: bool | None = None
    metadata: dict[str, Any] | None = None


class CronSearch(CronCount):
    limit: int = Field(default=10, ge=1, le=1000)
    offset: Offset = 0
    sort_by: SortBy = "created_at"
    sort_order: Literal["asc", "desc"] = "desc"
    select: list[SelectField] | None = None


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def cron_json(c: Cron) -> dict[str, Any]:
    """LangGraph's ``Cron``; ``payload`` is the run request each tick makes."""
    return {
        "cron_id": c.cron_id,
        "assistant_id": c.assistant_id,
        "thread_id": c.thread_id,
        "on_run_completed": c.on_run_completed,
        "end_time": _iso(c.end_time),
        "schedule": c.schedule,
        "timezone": c.timezone,
        "created_at": _iso(c.created_at),
        "updated_at": _iso(c.updated_at),
        "payload": {**c.payload, "assistant_id": c.assistant_id},
        "user_id": c.principal or None,
        "next_run_date": _iso(c.next_run_at),
        "metadata": c.metadata,
        "enabled": c.enabled,
    }


def _checker(ctx: AppContext) -> Check:
    """A cron's run request checked as the acceptance of its runs will check it
    (``accept.checked``: its assistant, stream modes, config, input, webhook)."""

    async def check(assistant_id: str, payload: Mapping[str, Any]) -> Assistant:
        return await checked(ctx, run_request(assistant_id, payload, {}))

    return check


def _draft(body: CronCreate) -> CronDraft:
    return CronDraft(
        assistant_id=body.assistant_id,
        schedule=body.schedule,
        payload=body.model_dump(include=set(RUN_FIELDS), exclude_unset=True),
        timezone=body.timezone,
        end_time=body.end_time,
        enabled=body.enabled,
        on_run_completed=body.on_run_completed,
        metadata=body.metadata,
    )


@router.post("/threads/{thread_id}/runs/crons")
async def create_for_thread(
    request: Request, thread_id: ThreadId, body: CronCreate
) -> dict[str, Any]:
    """A cron whose runs go to the thread, one after another (``multitask_strategy``, by
    default ``enqueue``, says what a tick does while the thread's run is still going)."""
    ctx = ctx_of(request)
    return cron_json(await ctx.crons.create(thread_id, _draft(body), _checker(ctx)))


@router.post("/runs/crons")
async def create(request: Request, body: CronCreate) -> dict[str, Any]:
    """A cron whose every run gets a new thread, deleted after the run
    (``on_run_completed: delete``, the default) or kept (``keep``)."""
    ctx = ctx_of(request)
    return cron_json(await ctx.crons.create(None, _draft(body), _checker(ctx)))


@router.post("/runs/crons/search")
async def search(
    request: Request, response: Response, body: Annotated[CronSearch | None, Body()] = None
) -> list[dict[str, Any]]:
    """The caller's crons, one page; ``X-Pagination-Total`` counts every match."""
    q = body or CronSearch()
    found, total = await ctx_of(request).crons.search(
        assistant_id=q.assistant_id,
        thread_id=q.thread_id,
        enabled=q.enabled,
        metadata=q.metadata,
        limit=q.limit,
        offset=q.offset,
        sort_by=q.sort_by,
        sort_order=q.sort_order,
    )
    response.headers["X-Pagination-Total"] = str(total)
    if q.offset + len(found) < total:
        response.headers["X-Pagination-Next"] = str(q.offset + len(found))
    rows = [cron_json(c) for c in found]
    if q.select:
        now = dt.datetime.now(dt.UTC).isoformat()
        rows = [{k: v for k, v in {**r, "now": now}.items() if k in q.select} for r in rows]
    return rows


@router.post("/runs/crons/count")
async def count(request: Request, body: Annotated[CronCount | None, Body()] = None) -> int:
    q = body or CronCount()
    return await ctx_of(request).crons.count(
        assistant_id=q.assistant_id, thread_id=q.thread_id, enabled=q.enabled, metadata=q.metadata
    )


@router.patch("/runs/crons/{cron_id}")
async def update(request: Request, cron_id: CronId, body: CronPatch) -> dict[str, Any]:
    """Change the given fields; a new schedule, time zone, end time or ``enabled``
    re-plans the next tick from now. The run request, changed, is checked again."""
    ctx = ctx_of(request)
    given = body.model_dump(exclude_unset=True)
    return cron_json(await ctx.crons.update(cron_id, given, _checker(ctx)))


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete(request: Request, cron_id: CronId) -> Response:
    await ctx_of(request).crons.delete(cron_id)
    return Response(status_code=204)
