"""Crons, written once for both backends over ``_reading()`` / ``_writing()`` and the named
queries of ``queries_crons.sql`` (the contract: ``store/contract/crons.py``).

When a cron fires is ``store/schedule.py``'s to say, computed here on the database's
clock (read in the same transaction that writes what it decides). The claim locks the
due rows (``FOR UPDATE SKIP LOCKED`` on Postgres; SQLite's ``BEGIN IMMEDIATE`` is its
one writer), decides each one's tick and next tick, and writes both before it commits:
two schedulers never take one tick, and a scheduler that dies after the claim leaves a
``firing_at`` that another fires again once the claim's hold has run out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from outlast.store import schedule
from outlast.store.crons import (
    SCHEDULING,
    SORT_FIELDS,
    UPDATABLE,
    Cron,
    CronNotFound,
    CronQuery,
    NewCron,
    Tick,
)
from outlast.store.hub import CRONS
from outlast.store.tx import Tx, TxProvider, stored_time

log = logging.getLogger(__name__)


def _time_or_none(value: Any) -> Any:
    return None if value is None else stored_time(value)


def _cron(tx: Tx, row: Mapping[str, Any]) -> Cron:
    return Cron(
        cron_id=str(row["cron_id"]),
        principal=row["principal"],
        assistant_id=row["assistant_id"],
        thread_id=row["thread_id"],
        schedule=row["schedule"],
        timezone=row["timezone"],
        payload=tx.decode_json(row["payload"]) or {},
        metadata=tx.decode_json(row["metadata"]) or {},
        enabled=bool(row["enabled"]),
        end_time=_time_or_none(row["end_time"]),
        on_run_completed=row["on_run_completed"],
        next_run_at=_time_or_none(row["next_run_at"]),
        firing_at=_time_or_none(row["firing_at"]),
        created_at=stored_time(row["created_at"]),
        updated_at=stored_time(row["updated_at"]),
    )


def _filters(tx: Tx, q: CronQuery) -> dict[str, Any]:
    return {
        "principal": q.principal,
        "assistant_id": q.assistant_id,
        "thread_id": q.thread_id,
        "enabled": q.enabled,
        "metadata": tx.encode_json(dict(q.metadata)) if q.metadata else None,
    }


async def _now(tx: Tx) -> Any:
    return stored_time((await tx.rows("cron_now"))[0]["now"])


class CronOps(TxProvider):
    async def create_cron(self, cron: NewCron) -> Cron:
        async with self._writing() as tx:
            now = await _now(tx)
            due = (
                schedule.first_due(cron.schedule, cron.timezone, now, cron.end_time)
                if cron.enabled
                else None
            )
            rows = await tx.rows(
                "cron_insert",
                cron_id=cron.cron_id,
                principal=cron.principal,
                assistant_id=cron.assistant_id,
                thread_id=cron.thread_id,
                schedule=cron.schedule,
                timezone=cron.timezone,
                payload=tx.encode_json(cron.payload),
                metadata=tx.encode_json(cron.metadata),
                enabled=cron.enabled,
                end_time=tx.encode_time(cron.end_time),
                on_run_completed=cron.on_run_completed,
                next_run_at=tx.encode_time(due),
            )
            await tx.notify(CRONS, cron.cron_id)
            return _cron(tx, rows[0])

    async def get_cron(self, cron_id: str, principal: str | None = "") -> Cron | None:
        async with self._reading() as tx:
            rows = await tx.rows("cron_get", cron_id=cron_id, principal=principal)
            return _cron(tx, rows[0]) if rows else None

    async def update_cron(
        self, cron_id: str, changes: Mapping[str, Any], principal: str | None = ""
    ) -> Cron:
        unknown = set(changes) - UPDATABLE
        if unknown:
            raise ValueError(f"cannot update cron fields {sorted(unknown)}")
        async with self._writing() as tx:
            locked = await tx.rows("cron_lock", cron_id=cron_id, principal=principal)
            if not locked:
                raise CronNotFound(f"Cron {cron_id} not found")
            current = _cron(tx, locked[0])
            fields: dict[str, Any] = {
                name: changes.get(name, getattr(current, name)) for name in UPDATABLE
            }
            for merged in ("metadata", "payload"):  # by top-level key, under the lock
                fields[merged] = {**getattr(current, merged), **dict(changes.get(merged, {}))}
            due = current.next_run_at
            if any(fields[k] != getattr(current, k) for k in SCHEDULING):  # planned from now
                now = await _now(tx)
                due = (
                    schedule.first_due(
                        fields["schedule"], fields["timezone"], now, fields["end_time"]
                    )
                    if fields["enabled"]
                    else None
                )
            rows = await tx.rows(
                "cron_update",
                cron_id=cron_id,
                principal=principal,
                schedule=fields["schedule"],
                timezone=fields["timezone"],
                payload=tx.encode_json(fields["payload"]),
                metadata=tx.encode_json(fields["metadata"]),
                enabled=bool(fields["enabled"]),
                end_time=tx.encode_time(fields["end_time"]),
                on_run_completed=fields["on_run_completed"],
                next_run_at=tx.encode_time(due),
            )
            await tx.notify(CRONS, cron_id)
            return _cron(tx, rows[0])

    async def delete_cron(self, cron_id: str, principal: str | None = "") -> None:
        async with self._writing() as tx:
            if not await tx.rows("cron_delete", cron_id=cron_id, principal=principal):
                raise CronNotFound(f"Cron {cron_id} not found")

    async def search_crons(
        self,
        query: CronQuery,
        *,
        limit: int = 10,
        offset: int = 0,
        sort_by: str = "created_at",
        sort_order: str = "desc",
    ) -> list[Cron]:
        if sort_by not in SORT_FIELDS:
            raise ValueError(f"cannot sort crons by {sort_by!r}")
        async with self._reading() as tx:
            rows = await tx.rows(
                "cron_search",
                **_filters(tx, query),
                sort_by=sort_by,
                desc=sort_order == "desc",
                limit=limit,
                offset=offset,
            )
            return [_cron(tx, r) for r in rows]

    async def count_crons(self, query: CronQuery) -> int:
        async with self._reading() as tx:
            return int((await tx.rows("cron_count", **_filters(tx, query)))[0]["n"])

    # -- the scheduler's side ------------------------------------------------------------

    async def claim_crons(self, limit: int, hold: float) -> list[Tick]:
        ticks: list[Tick] = []
        async with self._writing() as tx:
            for row in await tx.rows("cron_due", limit=limit):
                cron = _cron(tx, row)
                if cron.firing_at is not None:  # claimed before, never recorded as fired
                    fire, due = cron.firing_at, cron.next_run_at
                else:
                    fire, due = _planned(cron, stored_time(row["db_now"]))
                claimed = await tx.rows(
                    "cron_claim",
                    cron_id=cron.cron_id,
                    firing_at=tx.encode_time(fire),
                    next_run_at=tx.encode_time(due),
                    hold=hold,
                )
                if fire is not None:
                    ticks.append(Tick(_cron(tx, claimed[0]), fire))
        return ticks

    async def cron_fired(self, tick: Tick) -> None:
        async with self._writing() as tx:
            await tx.rows("cron_fired", cron_id=tick.cron.cron_id, at=tx.encode_time(tick.at))

    async def next_cron_in(self) -> float | None:
        async with self._reading() as tx:
            seconds = (await tx.rows("cron_next_in"))[0]["s"]
            return None if seconds is None else float(seconds)


def _planned(cron: Cron, now: Any) -> tuple[Any, Any]:
    """The tick a due cron fires and its next one. A schedule that cannot be read any
    more (a time zone gone from the system's database) fires nothing and is not due
    again, rather than stopping every other cron's claim."""
    assert cron.next_run_at is not None  # only due crons are claimed
    try:
        planned = schedule.plan(cron.schedule, cron.timezone, cron.next_run_at, now, cron.end_time)
    except Exception:
        log.exception("cron %s: its schedule %r cannot be read", cron.cron_id, cron.schedule)
        return None, None
    if planned.fire is not None and planned.fire > cron.next_run_at:
        log.info(
            "cron %s: ticks from %s missed; firing the latest, %s",
            cron.cron_id,
            cron.next_run_at.isoformat(),
            planned.fire.isoformat(),
        )
    return planned.fire, planned.next
