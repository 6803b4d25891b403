"""Row → dataclass mapping shared by the backends, and the JSON encoding they store."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from outlast.jsonable import to_jsonable
from outlast.store.base import Effect, Event, Run, Wait
from outlast.vocabulary import RunStatus


def dumps(value: Any) -> str:
    return json.dumps(to_jsonable(value), separators=(",", ":"), ensure_ascii=False)


def dumps_or_none(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _identity(value: Any) -> Any:
    return value


def run_from_row(
    row: Mapping[str, Any],
    load: Callable[[Any], Any] = _identity,
    when: Callable[[Any], dt.datetime | None] = _identity,
) -> Run:
    created = when(row["created_at"])
    updated = when(row["updated_at"])
    assert created is not None and updated is not None
    return Run(
        id=str(row["id"]),
        pos=row["pos"],
        principal=row["principal"],
        thread_id=row["thread_id"],
        graph=row["graph"],
        status=RunStatus(row["status"]),
        input=load(row["input"]),
        config=load(row["config"]) or {},
        metadata=load(row["metadata"]) or {},
        budget=load(row["budget"]),
        idempotency_key=row["idempotency_key"],
        fingerprint=row["fingerprint"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        worker_id=row["worker_id"],
        lease_epoch=row["lease_epoch"],
        lease_expires_at=when(row["lease_expires_at"]),
        last_seq=row["last_seq"],
        result=load(row["result"]),
        error=load(row["error"]),
        created_at=created,
        updated_at=updated,
        activity=load(row["activity"]),
        usage=load(row["usage"]),
        options=load(row["options"]),
        supervision=load(row["supervision"]),
        ending=load(row["ending"]),
    )


def event_from_row(
    row: Mapping[str, Any],
    load: Callable[[Any], Any] = _identity,
    when: Callable[[Any], dt.datetime | None] = _identity,
) -> Event:
    time = when(row["created_at"])
    assert time is not None
    return Event(
        run_id=str(row["run_id"]),
        seq=row["seq"],
        type=row["type"],
        data=load(row["data"]),
        time=time,
    )


def wait_from_row(
    row: Mapping[str, Any],
    load: Callable[[Any], Any] = _identity,
    when: Callable[[Any], dt.datetime | None] = _identity,
) -> Wait:
    since = when(row["since"])
    assert since is not None
    return Wait(
        id=str(row["id"]),
        run_id=str(row["run_id"]),
        interrupt_id=row["interrupt_id"],
        kind=row["kind"],
        status=row["status"],
        object=load(row["object"]),
        prompt=load(row["prompt"]),
        schema=load(row["schema"]),
        event_keys=load(row["event_keys"]),
        has_default=bool(row["has_default"]),
        default=load(row["default_answer"]),
        probe=load(row["probe"]),
        answer=load(row["answer"]),
        answered_how=row["answered_how"],
        since=since,
        last_signal_at=when(row["last_signal_at"]),
        lease_expires_at=when(row["lease_expires_at"]),
        wake_at=when(row["wake_at"]),
        renewals=row["renewals"],
        failures=row["failures"],
        answered_at=when(row["answered_at"]),
        answer_key=row.get("answer_key"),
    )


def effect_from_row(
    row: Mapping[str, Any],
    load: Callable[[Any], Any] = _identity,
    when: Callable[[Any], dt.datetime | None] = _identity,
) -> Effect:
    started = when(row["started_at"])
    assert started is not None
    return Effect(
        run_id=str(row["run_id"]),
        key=row["key"],
        tool=row["tool"],
        args_hash=row["args_hash"],
        args=load(row["args"]),
        idempotent=bool(row["idempotent"]),
        status=row["status"],
        result=load(row["result"]),
        error=row["error"],
        started_at=started,
        finished_at=when(row["finished_at"]),
        calls=row["calls"],
        compensate=row["compensate"],
        compensates=row["compensates"],
    )
