"""Runs built by hand, for tests that drive the store (or a worker) directly."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from outlast.config import Settings
from outlast.runtime.accept import RunRequest, fingerprint
from outlast.runtime.accept import new_run as accepted_run
from outlast.runtime.policy import RunPolicy
from outlast.store import EventDraft, LgRun, NewRun, Run, Store
from outlast.store.base import system_assistant_id
from outlast.store.crons import NewCron
from outlast.store.postgres import PostgresStore
from outlast.store.sqlite import SqliteStore


def new_run(
    *,
    graph: str = "steps",
    input: Any = None,
    thread_id: str | None = None,
    key: str | None = None,
    max_attempts: int = 3,
    config: dict[str, Any] | None = None,
) -> NewRun:
    body = {"graph": graph, "input": input or {"n": 1}, "config": config or {}}
    return NewRun(
        id=str(uuid.uuid4()),
        thread_id=thread_id or str(uuid.uuid4()),
        graph=graph,
        input=body["input"],
        config=config or {},
        metadata={},
        budget=None,
        idempotency_key=key,
        fingerprint=fingerprint(body),
        max_attempts=max_attempts,
    )


async def accept(
    store: Store,
    request: RunRequest,
    *,
    graphs: list[str],
    max_attempts: int,
    idempotency_key: str | None = None,
) -> tuple[Run, bool]:
    """A run in the store as the API would accept it (``new_run``, then the store), without
    HTTP and without the API's limits: for tests that drive a worker directly."""
    new = accepted_run(
        request, graphs=graphs, max_attempts=max_attempts, idempotency_key=idempotency_key
    )
    return await store.create_run(new)


def lg_run_of(new: NewRun, **changes: object) -> LgRun:
    """The LangGraph run record of ``new`` (on the system assistant of its graph)."""
    lg = LgRun(
        id=new.id,
        run_id=new.id,
        thread_id=new.thread_id,
        principal=new.principal,
        assistant_id=system_assistant_id(new.graph),
        from_seq=0,
        kwargs={"input": new.input},
        metadata={"m": 1},
        multitask_strategy="reject",
        created_at=dt.datetime.now(dt.UTC),
        idempotency_key=new.idempotency_key,
    )
    return dataclasses.replace(lg, **changes)  # type: ignore[arg-type]


def new_cron(
    *,
    principal: str = "",
    schedule: str = "0 0 1 1 *",
    thread_id: str | None = None,
    **changes: Any,
) -> NewCron:
    """A cron of the ``steps`` graph's system assistant (yearly unless ``schedule``)."""
    cron = NewCron(
        cron_id=str(uuid.uuid4()),
        principal=principal,
        assistant_id=system_assistant_id("steps"),
        thread_id=thread_id,
        schedule=schedule,
        timezone=None,
        payload={"input": {"n": 1}},
        metadata={},
    )
    return dataclasses.replace(cron, **changes)


async def set_cron_due(store: Store, cron_id: str, when: dt.datetime) -> None:
    """Move a cron's next tick to ``when``: the ticks a test says were missed while no
    process ran (nothing in the store's contract moves a tick backwards)."""
    if isinstance(store, PostgresStore):
        async with store.pool.connection() as conn:
            await conn.execute(
                "UPDATE outlast_crons SET next_run_at = %s WHERE cron_id = %s", (when, cron_id)
            )
        return
    assert isinstance(store, SqliteStore)
    async with store._db.transaction() as conn:
        await conn.execute(
            "UPDATE outlast_crons SET next_run_at = ? WHERE cron_id = ?",
            (when.timestamp(), cron_id),
        )


async def cron_runs(
    store: Store, cron_id: str, principal: str = ""
) -> list[tuple[dt.datetime, Run]]:
    """The runs a cron made, by the tick each was made for (read from its idempotency
    key, ``Tick.key``), oldest tick first."""
    prefix = f"cron:{cron_id}:"
    runs = await store.list_runs(
        thread_id=None, status=None, limit=100_000, before=None, principal=principal
    )
    made = [
        (dt.datetime.fromisoformat(r.idempotency_key.removeprefix(prefix)), r)
        for r in runs
        if r.idempotency_key and r.idempotency_key.startswith(prefix)
    ]
    return sorted(made, key=lambda pair: pair[0])


class SupervisionStore:
    """The one store write a run's supervisor policy makes, remembered."""

    def __init__(self) -> None:
        self.supervision: dict[str, Any] | None = None

    async def set_supervision(self, lease: Any, supervision: dict[str, Any]) -> None:
        self.supervision = supervision


class RecordingSink:
    """A run's event sink that keeps what it is given."""

    def __init__(self) -> None:
        self.drafts: list[EventDraft] = []

    def put(self, draft: EventDraft) -> None:
        self.drafts.append(draft)


def supervision_policy(
    store: SupervisionStore,
    sink: RecordingSink,
    settings: Settings,
    stop: Callable[[str], None] = lambda reason: None,
) -> RunPolicy:
    """The supervisor policy of one run (``r``, no budget, no conversation) as a worker
    builds it, with the supervision it kept so far: a later one is the next attempt."""
    run = SimpleNamespace(budget=None, usage=None, supervision=store.supervision)
    policy = RunPolicy(
        store,  # type: ignore[arg-type]
        SimpleNamespace(run_id="r"),  # type: ignore[arg-type]
        settings,
        run,  # type: ignore[arg-type]
        stop=stop,
        can_remind=lambda: False,
    )
    policy.attach(sink)  # type: ignore[arg-type]
    return policy


def expired_look(activity: dict[str, Any], **over: Any) -> dict[str, Any]:
    """A question to the supervisor on an expired activity lease: past the renewal cap,
    silent since the last look, no conversation; ``over`` changes any of it."""
    return {
        "trigger": "activity_expired",
        "ttl": 30.0,
        "backoff": 2.0,
        "renewal_cap": 3,
        "renewals_granted": 3,
        "signals_since_last": 0,
        "can_remind": False,
        "activity": activity,
        **over,
    }
