"""Crons (store/cron_ops.py ``CronOps``): owned by a principal, and claimed tick by tick by
any number of schedulers, each tick once."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from outlast.store import Store, schedule
from outlast.store.crons import CronNotFound, CronQuery
from outlast.store.hub import CRONS
from tests.store_contract.support import Notes
from tests.util import new_cron, set_cron_due

YEARLY = "0 0 1 1 *"
LONG_AGO = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _next_new_year(after: dt.datetime) -> dt.datetime:
    return dt.datetime(after.year + 1, 1, 1, tzinfo=dt.UTC)


async def test_create_get_and_the_owner_only(store: Store, notes: Notes) -> None:
    before = _now()
    made = await store.create_cron(
        new_cron(principal="alice", metadata={"team": "a"}, payload={"input": {"n": 2}})
    )
    assert made.principal == "alice" and made.schedule == YEARLY and made.enabled
    assert made.payload == {"input": {"n": 2}} and made.metadata == {"team": "a"}
    # due at the schedule's first tick after the database's now
    assert made.next_run_at == _next_new_year(before) and made.firing_at is None
    assert await store.get_cron(made.cron_id, "alice") == made
    assert await store.get_cron(made.cron_id, "bob") is None
    assert await notes.take() == {(CRONS, made.cron_id)}  # schedulers re-plan


async def test_a_disabled_or_ended_cron_is_not_due(store: Store) -> None:
    off = await store.create_cron(new_cron(enabled=False))
    ended = await store.create_cron(new_cron(end_time=_now() - dt.timedelta(days=1)))
    assert off.next_run_at is None and ended.next_run_at is None
    assert await store.next_cron_in() is None


async def test_update_merges_metadata_and_replans_only_a_new_schedule(
    store: Store, notes: Notes
) -> None:
    made = await store.create_cron(new_cron(principal="alice", metadata={"a": 1}))
    await notes.take()
    kept = await store.update_cron(
        made.cron_id, {"metadata": {"b": 2}, "payload": {"webhook": "https://x.example"}}, "alice"
    )
    assert kept.metadata == {"a": 1, "b": 2}
    assert kept.payload == {"input": {"n": 1}, "webhook": "https://x.example"}
    assert kept.next_run_at == made.next_run_at  # not a schedule change
    same = await store.update_cron(made.cron_id, {"schedule": YEARLY, "enabled": True}, "alice")
    assert same.next_run_at == made.next_run_at  # nor is the same schedule again
    assert kept.updated_at >= made.updated_at
    assert await notes.take() == {(CRONS, made.cron_id)}
    june = await store.update_cron(made.cron_id, {"schedule": "0 0 1 6 *"}, "alice")
    assert june.next_run_at == schedule.next_after("0 0 1 6 *", None, june.updated_at)
    madrid = await store.update_cron(made.cron_id, {"timezone": "Europe/Madrid"}, "alice")
    assert madrid.next_run_at is not None and madrid.next_run_at.hour == 22  # 00:00 CEST
    off = await store.update_cron(made.cron_id, {"enabled": False}, "alice")
    assert off.next_run_at is None and not off.enabled
    on = await store.update_cron(made.cron_id, {"enabled": True, "end_time": None}, "alice")
    assert on.next_run_at == madrid.next_run_at  # planned again, from now
    with pytest.raises(CronNotFound):
        await store.update_cron(made.cron_id, {"enabled": False}, "bob")
    with pytest.raises(ValueError):
        await store.update_cron(made.cron_id, {"principal": "bob"}, "alice")


async def test_delete_is_the_owners(store: Store) -> None:
    made = await store.create_cron(new_cron(principal="alice"))
    with pytest.raises(CronNotFound):
        await store.delete_cron(made.cron_id, "bob")
    await store.delete_cron(made.cron_id, "alice")
    assert await store.get_cron(made.cron_id, "alice") is None
    with pytest.raises(CronNotFound):
        await store.delete_cron(made.cron_id, "alice")


async def test_a_threads_crons_go_with_it(store: Store) -> None:
    await store.lg_create_thread("t-cron", "alice", {})
    made = await store.create_cron(new_cron(principal="alice", thread_id="t-cron"))
    assert made.thread_id == "t-cron"
    assert await store.lg_delete_thread("t-cron")
    assert await store.get_cron(made.cron_id, "alice") is None


async def test_search_and_count_filter_sort_and_page(store: Store) -> None:
    await store.lg_create_thread("t-search", "alice", {})
    made = [
        await store.create_cron(new_cron(principal="alice", metadata={"i": i, "even": i % 2 == 0}))
        for i in range(4)
    ]
    on_thread = await store.create_cron(
        new_cron(principal="alice", thread_id="t-search", assistant_id="other", enabled=False)
    )
    await store.create_cron(new_cron(principal="bob"))
    mine = await store.search_crons(CronQuery(principal="alice"), limit=100, sort_order="asc")
    assert {c.cron_id for c in mine} == {c.cron_id for c in [*made, on_thread]}
    times = [c.created_at for c in mine]  # SQLite's clock ticks in ms: ties by id
    assert times == sorted(times)
    ids = sorted(c.cron_id for c in mine)
    by_id = await store.search_crons(CronQuery(principal="alice"), limit=100, sort_by="cron_id")
    assert [c.cron_id for c in by_id] == ids[::-1]
    page = await store.search_crons(
        CronQuery(principal="alice"), limit=2, offset=2, sort_by="cron_id", sort_order="asc"
    )
    assert [c.cron_id for c in page] == ids[2:4]
    # the disabled one has no next tick: last either way
    by_next = await store.search_crons(
        CronQuery(principal="alice"), limit=100, sort_by="next_run_date"
    )
    assert by_next[-1].cron_id == on_thread.cron_id
    even = await store.search_crons(CronQuery(principal="alice", metadata={"even": True}))
    assert {c.cron_id for c in even} == {made[0].cron_id, made[2].cron_id}
    assert await store.count_crons(CronQuery(principal="alice", metadata={"even": True})) == 2
    assert await store.count_crons(CronQuery(principal="alice", metadata={"i": "1"})) == 0  # typed
    assert [
        c.cron_id
        for c in await store.search_crons(CronQuery(principal="alice", thread_id="t-search"))
    ] == [on_thread.cron_id]
    assert await store.count_crons(CronQuery(principal="alice", assistant_id="other")) == 1
    assert await store.count_crons(CronQuery(principal="alice", enabled=True)) == 4
    assert await store.count_crons(CronQuery(principal="alice", enabled=False)) == 1
    assert await store.count_crons(CronQuery(principal="alice")) == 5
    assert await store.count_crons(CronQuery(principal="bob")) == 1
    with pytest.raises(ValueError):
        await store.search_crons(CronQuery(principal="alice"), sort_by="schedule")


async def test_ticks_missed_fire_once_for_the_latest_then_the_schedule_resumes(
    store: Store,
) -> None:
    made = await store.create_cron(new_cron())
    await set_cron_due(store, made.cron_id, LONG_AGO)  # years of ticks missed
    now = _now()
    (tick,) = await store.claim_crons(10, hold=30)
    latest = dt.datetime(now.year, 1, 1, tzinfo=dt.UTC)
    assert tick.at == latest and tick.cron.firing_at == latest
    assert tick.cron.next_run_at == _next_new_year(now)
    assert tick.key == f"cron:{made.cron_id}:{latest.isoformat()}"
    assert await store.claim_crons(10, hold=30) == []  # held by its claimer
    remaining = await store.next_cron_in()
    assert remaining is not None and 0 < remaining <= 30
    await store.cron_fired(tick)
    fired = await store.get_cron(made.cron_id)
    assert fired is not None and fired.firing_at is None
    assert fired.next_run_at == _next_new_year(now)
    assert await store.claim_crons(10, hold=30) == []
    remaining = await store.next_cron_in()
    assert remaining is not None and remaining > 30


async def test_a_tick_not_recorded_as_fired_is_claimed_again_the_same(store: Store) -> None:
    made = await store.create_cron(new_cron())
    await set_cron_due(store, made.cron_id, LONG_AGO)
    (first,) = await store.claim_crons(10, hold=0)  # its claimer dies at once
    (again,) = await store.claim_crons(10, hold=30)
    assert (again.at, again.key) == (first.at, first.key)
    assert again.cron.next_run_at == first.cron.next_run_at
    await store.cron_fired(first)  # a late record of the first claim counts too
    assert await store.claim_crons(10, hold=0) == []


async def test_concurrent_claims_take_each_tick_once(store: Store) -> None:
    made = [await store.create_cron(new_cron()) for _ in range(6)]
    for cron in made:
        await set_cron_due(store, cron.cron_id, LONG_AGO)
    claimed = await asyncio.gather(*(store.claim_crons(2, hold=30) for _ in range(6)))
    keys = [t.key for ticks in claimed for t in ticks]
    assert len(keys) == len(set(keys)) == len(made)


async def test_a_tick_past_the_end_time_does_not_fire_and_ends_the_cron(store: Store) -> None:
    made = await store.create_cron(new_cron(end_time=dt.datetime(2030, 1, 1, tzinfo=dt.UTC)))
    await store.update_cron(made.cron_id, {"end_time": dt.datetime(2021, 6, 1, tzinfo=dt.UTC)})
    await set_cron_due(store, made.cron_id, LONG_AGO)
    assert await store.claim_crons(10, hold=30) == []  # this year's tick is past the end
    ended = await store.get_cron(made.cron_id)
    assert ended is not None and ended.next_run_at is None and ended.firing_at is None
    assert await store.next_cron_in() is None
