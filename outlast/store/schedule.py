"""When a cron fires: its schedule read by croniter in its time zone, and which tick a
claim fires. Pure functions of the times given (the store passes the database's now),
so both backends, the API's checks and the tests agree on every tick.

A schedule has five fields (minute, hour, day of month, month, day of week), or six with
seconds last (croniter's order: ``* * * * * */10`` is every ten seconds), or an alias
(``@daily``). It is read in ``timezone`` (IANA, default UTC): ``0 9 * * *`` in
``Europe/Madrid`` is 09:00 there, summer and winter. Ticks are stored in UTC.

**Catch-up.** Ticks missed while no process was running (or while the scheduler was
late) fire once, for the latest of them, and the schedule resumes after now: a daily
report down for three days runs once on restart, not three times, and with the newest
tick's idempotency key (``plan``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

_TICK = dt.timedelta(microseconds=1)


class BadSchedule(ValueError):
    """A schedule or time zone a cron cannot have; ``field`` names which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def zone(timezone: str | None) -> ZoneInfo:
    """The IANA time zone a schedule is read in (None: UTC)."""
    try:
        return ZoneInfo(timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise BadSchedule("timezone", f"unknown time zone {timezone!r}") from None


def readable(schedule: str) -> bool:
    """Whether croniter reads ``schedule`` (five or six fields, or an alias)."""
    return bool(croniter.is_valid(schedule))


def check(schedule: str, timezone: str | None, now: dt.datetime) -> None:
    """Refuse a schedule croniter cannot read, one that never fires after ``now`` (``0 0
    31 2 *``), or an unknown time zone."""
    zone(timezone)
    if not readable(schedule):
        raise BadSchedule("schedule", f"not a cron expression: {schedule!r}")
    if next_after(schedule, timezone, now) is None:
        raise BadSchedule("schedule", f"{schedule!r} never fires")


def next_after(schedule: str, timezone: str | None, after: dt.datetime) -> dt.datetime | None:
    """The first tick strictly after ``after``, in UTC; None if there is none."""
    try:
        tick = croniter(schedule, after.astimezone(zone(timezone))).get_next(dt.datetime)
    except (CroniterBadDateError, CroniterBadCronError):
        return None
    return _utc(tick)


def latest_by(schedule: str, timezone: str | None, now: dt.datetime) -> dt.datetime | None:
    """The last tick at or before ``now``, in UTC; None if there is none."""
    try:
        start = (now + _TICK).astimezone(zone(timezone))
        tick = croniter(schedule, start).get_prev(dt.datetime)
    except (CroniterBadDateError, CroniterBadCronError):
        return None
    return _utc(tick)


def first_due(
    schedule: str, timezone: str | None, now: dt.datetime, end_time: dt.datetime | None
) -> dt.datetime | None:
    """When a cron made (or rescheduled) at ``now`` fires first: None once that would be
    past its ``end_time`` (it will not fire again)."""
    tick = next_after(schedule, timezone, now)
    if tick is None or (end_time is not None and tick > end_time):
        return None
    return tick


@dataclass(frozen=True, slots=True)
class Plan:
    """What a claim of a due cron does: fire ``fire`` (None: nothing, the cron has
    ended), and be due again at ``next`` (None: never)."""

    fire: dt.datetime | None
    next: dt.datetime | None


def plan(
    schedule: str,
    timezone: str | None,
    due: dt.datetime,
    now: dt.datetime,
    end_time: dt.datetime | None,
) -> Plan:
    """The claim of a cron due at ``due`` (≤ ``now``): the latest tick by now fires (the
    catch-up policy, above), unless it is past ``end_time``; then the first tick after
    now."""
    try:
        latest = latest_by(schedule, timezone, now)
    except CroniterError:
        latest = None
    tick = due if latest is None else max(due, latest)
    fire = tick if end_time is None or tick <= end_time else None
    return Plan(fire, first_due(schedule, timezone, now, end_time))


def _utc(tick: dt.datetime) -> dt.datetime:
    return tick.astimezone(dt.UTC)
