"""The crons' records and errors; what the store does with them is ``CronStore``
(store/contract/crons.py), written once for both backends in ``store/cron_ops.py``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from outlast.errors import OutlastError


class CronNotFound(OutlastError):
    status = 404
    title = "Cron not found"


@dataclass(frozen=True, slots=True)
class NewCron:
    """A cron as the LangGraph face makes it: a run request (``payload``, the body of a
    run on ``thread_id``, or of a stateless run) and when to make it (``schedule`` in
    ``timezone``, until ``end_time``). The store sets its times on the database's clock."""

    cron_id: str
    principal: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    timezone: str | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    enabled: bool = True
    end_time: dt.datetime | None = None
    on_run_completed: str | None = None  # stateless: "delete" (the default) or "keep"


@dataclass(frozen=True, slots=True)
class CronQuery:
    """Which of a principal's crons a search or a count means: every given field must
    match; ``metadata`` matches when every given key has exactly the given value.
    ``principal`` None: every principal's (an app's auth.py shares them; its handlers
    filter)."""

    principal: str | None = ""
    assistant_id: str | None = None
    thread_id: str | None = None
    enabled: bool | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Cron:
    """A stored cron: ``next_run_at`` is its next tick (None: it will not fire again),
    ``firing_at`` a tick claimed by a scheduler and not yet recorded as fired."""

    cron_id: str
    principal: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    timezone: str | None
    payload: dict[str, Any]
    metadata: dict[str, Any]
    enabled: bool
    end_time: dt.datetime | None
    on_run_completed: str | None
    next_run_at: dt.datetime | None
    firing_at: dt.datetime | None
    created_at: dt.datetime
    updated_at: dt.datetime


@dataclass(frozen=True, slots=True)
class Tick:
    """One firing of a cron, claimed by a scheduler: ``at`` is the time it was due."""

    cron: Cron
    at: dt.datetime

    @property
    def key(self) -> str:
        """The idempotency key of the tick's run: a tick fired again (its scheduler died
        before it was recorded as fired) gets the same run, never a second one."""
        return f"cron:{self.cron.cron_id}:{self.at.astimezone(dt.UTC).isoformat()}"


# What an update may change (store/cron_ops.py): the schedule's fields (a change of any
# re-plans the next tick from now) and the rest, kept as given.
SCHEDULING = frozenset({"schedule", "timezone", "end_time", "enabled"})
UPDATABLE = SCHEDULING | {"on_run_completed", "payload", "metadata"}
SORT_FIELDS = frozenset(
    {
        "cron_id",
        "assistant_id",
        "thread_id",
        "created_at",
        "updated_at",
        "next_run_date",
        "end_time",
    }
)
