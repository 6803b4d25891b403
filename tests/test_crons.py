"""Crons through LangGraph's own client (``langgraph_sdk``'s ``client.crons``), on both
backends: made, found, changed and deleted by their principal only; refused with a 422
that names the field when their schedule or time zone is wrong; and firing ordinary runs
on schedule, each tick once, never past their ``end_time``, never while disabled, and
once for the latest of the ticks missed while nothing ran."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from outlast.store import Store
from outlast.store.base import system_assistant_id
from tests.harness import NotYet, eventually, make_settings, serve
from tests.util import cron_runs, set_cron_due

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789ab"
STEPS = system_assistant_id("steps")
EVERY_SECOND = "* * * * * *"
YEARLY = "0 0 1 1 *"


async def test_crud_search_count_and_filters(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        on_thread = await client.crons.create_for_thread(
            thread, "steps", schedule=YEARLY, input={"n": 1}, metadata={"team": "a"}
        )
        assert on_thread["assistant_id"] == STEPS and on_thread["thread_id"] == thread
        assert on_thread["schedule"] == YEARLY and on_thread["enabled"] is True
        assert on_thread["metadata"] == {"team": "a"} and on_thread["timezone"] is None
        assert on_thread["payload"] == {"input": {"n": 1}, "assistant_id": STEPS}
        assert on_thread["on_run_completed"] is None and on_thread["user_id"] is None
        next_year = dt.datetime(dt.datetime.now(dt.UTC).year + 1, 1, 1, tzinfo=dt.UTC)
        assert dt.datetime.fromisoformat(on_thread["next_run_date"]) == next_year
        stateless = await client.crons.create(
            "steps",
            schedule="0 9 * * 1-5",
            timezone="Europe/Madrid",
            input={"n": 2},
            metadata={"team": "b"},
            webhook="https://hooks.example.com/x",
            durability="exit",
        )
        assert stateless["thread_id"] is None and stateless["on_run_completed"] == "delete"
        first = dt.datetime.fromisoformat(stateless["next_run_date"])
        assert first.astimezone(dt.UTC).hour in (7, 8)  # 09:00 in Madrid, winter or summer
        assert stateless["payload"]["webhook"] == "https://hooks.example.com/x"

        found = await client.crons.search(limit=20)
        assert [c["cron_id"] for c in found] == [stateless["cron_id"], on_thread["cron_id"]]
        assert await client.crons.count() == 2
        assert [c["cron_id"] for c in await client.crons.search(thread_id=thread)] == [
            on_thread["cron_id"]
        ]
        assert len(await client.crons.search(assistant_id="steps")) == 2  # a graph's name
        assert await client.crons.count(metadata={"team": "b"}) == 1
        assert await client.crons.count(assistant_id="lg_chat") == 0
        oldest = await client.crons.search(sort_by="created_at", sort_order="asc", limit=1)
        assert [c["cron_id"] for c in oldest] == [on_thread["cron_id"]]
        picked = await client.crons.search(select=["cron_id", "schedule"], offset=1)
        assert picked == [{"cron_id": on_thread["cron_id"], "schedule": YEARLY}]

        changed = await client.crons.update(
            on_thread["cron_id"], schedule="0 0 1 6 *", metadata={"x": 1}, input={"n": 3}
        )
        assert changed["schedule"] == "0 0 1 6 *" and changed["metadata"] == {"team": "a", "x": 1}
        assert changed["payload"]["input"] == {"n": 3}
        assert changed["next_run_date"] != on_thread["next_run_date"]
        off = await client.crons.update(on_thread["cron_id"], enabled=False)
        assert off["enabled"] is False and off["next_run_date"] is None
        assert await client.crons.search(enabled=False) == [off]
        end = dt.datetime(2099, 1, 1, tzinfo=dt.UTC)
        ends = await client.crons.update(stateless["cron_id"], end_time=end)
        assert dt.datetime.fromisoformat(ends["end_time"]) == end
        cleared = await client.crons.update(stateless["cron_id"], end_time=None)
        assert cleared["end_time"] is None and cleared["next_run_date"] is not None

        await client.crons.delete(on_thread["cron_id"])
        with pytest.raises(NotFoundError):
            await client.crons.delete(on_thread["cron_id"])
        with pytest.raises(NotFoundError):
            await client.crons.update(on_thread["cron_id"], enabled=True)
        with pytest.raises(NotFoundError):
            await client.crons.create_for_thread(str(uuid.uuid4()), "steps", schedule=YEARLY)
        assert await client.crons.count() == 1


async def test_a_principal_sees_and_changes_only_its_own_crons(store: Store) -> None:
    settings = make_settings(api_keys=f"alice:{ALICE},bob:{BOB}")
    async with serve(store, settings) as srv:
        alice = srv.sdk(api_key=ALICE)
        bob = srv.sdk(api_key=BOB)
        thread = (await alice.threads.create())["thread_id"]
        mine = await alice.crons.create_for_thread(thread, "steps", schedule=YEARLY)
        assert mine["user_id"] == "alice"
        assert await bob.crons.search() == [] and await bob.crons.count() == 0
        with pytest.raises(NotFoundError):
            await bob.crons.update(mine["cron_id"], enabled=False)
        with pytest.raises(NotFoundError):
            await bob.crons.delete(mine["cron_id"])
        with pytest.raises(NotFoundError):  # alice's thread does not exist for bob
            await bob.crons.create_for_thread(thread, "steps", schedule=YEARLY)
        assert [c["cron_id"] for c in await alice.crons.search()] == [mine["cron_id"]]
        assert (await alice.crons.search())[0]["enabled"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": "every day"}, "schedule"),
        ({"schedule": "61 * * * *"}, "schedule"),
        ({"schedule": "0 0 31 2 *"}, "schedule"),  # never fires
        ({"schedule": YEARLY, "timezone": "Mars/Olympus_Mons"}, "timezone"),
    ],
)
async def test_a_bad_schedule_or_timezone_is_a_422_naming_it(
    store: Store, body: dict[str, Any], field: str
) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        for path in ("/runs/crons", f"/threads/{thread}/runs/crons"):
            answer = await srv.client.post(path, json={"assistant_id": "steps", **body})
            assert answer.status_code == 422, answer.text
            assert field in answer.json()["detail"]
        assert await client.crons.count() == 0  # nothing stored
        made = await client.crons.create("steps", schedule=YEARLY)
        answer = await srv.client.patch(f"/runs/crons/{made['cron_id']}", json=body)
        assert answer.status_code == 422 and field in answer.json()["detail"]
        assert await client.crons.search() == [made]  # unchanged
        with pytest.raises(UnprocessableEntityError):  # and the run request is checked too
            await client.crons.create("no-such-graph", schedule=YEARLY)
        with pytest.raises(UnprocessableEntityError):
            await client.crons.create("steps", schedule=YEARLY, stream_mode="nonsense")
        with pytest.raises(UnprocessableEntityError):
            await client.crons.create("steps", schedule=YEARLY, webhook="ftp://example.com/")
        with pytest.raises(UnprocessableEntityError):
            await client.crons.update(made["cron_id"], webhook="http://10.0.0.1/x")
        assert await client.crons.search() == [made]


async def test_a_cron_fires_ordinary_runs_on_schedule(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        cron = await client.crons.create_for_thread(
            thread, "steps", schedule=EVERY_SECOND, input={"n": 1}, metadata={"m": 1}
        )

        async def three() -> list[Any]:
            done = [
                r for r in await client.runs.list(thread, limit=100) if r["status"] == "success"
            ]
            return done if len(done) >= 3 else []

        runs = await eventually(three, what="three runs of the cron succeeded")
        await client.crons.delete(cron["cron_id"])
        assert all(r["metadata"] == {"m": 1, "cron_id": cron["cron_id"]} for r in runs)
        assert all(r["assistant_id"] == STEPS for r in runs)
        made = await cron_runs(store, cron["cron_id"])
        ticks = [tick for tick, _ in made]
        assert ticks == sorted(set(ticks)) and all(t.microsecond == 0 for t in ticks)
        assert all(run.created_at >= tick for tick, run in made)  # never before its time
        assert {r["run_id"] for r in runs} <= {run.id for _, run in made}
        state = await client.threads.get_state(thread)
        assert state["values"]  # they ran the graph on the thread, one after another


async def test_stateless_runs_delete_or_keep_their_threads(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        gone = await client.crons.create("steps", schedule=EVERY_SECOND, input={"n": 1})
        kept = await client.crons.create(
            "steps", schedule=EVERY_SECOND, input={"n": 1}, on_run_completed="keep"
        )

        async def both_ran() -> bool:
            for cron in (gone, kept):
                made = await cron_runs(store, cron["cron_id"])
                if not any(r.terminal for _, r in made):
                    raise NotYet(cron["cron_id"])
            return True

        await eventually(both_ran, what="a run of each cron ended")
        for cron in (gone, kept):
            await client.crons.delete(cron["cron_id"])
        ended = {
            name: [r.thread_id for _, r in await cron_runs(store, c["cron_id"]) if r.terminal]
            for name, c in (("gone", gone), ("kept", kept))
        }
        expired = set(await store.lg_expire_temporary(0))  # what retention would delete
        assert all(len(set(threads)) == len(threads) for threads in ended.values())  # new each
        assert set(ended["gone"]) <= expired and not set(ended["kept"]) & expired


async def test_a_disabled_cron_does_not_fire_and_end_time_is_honoured(store: Store) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        witness = await client.crons.create("steps", schedule=EVERY_SECOND)
        off = await client.crons.create("steps", schedule=EVERY_SECOND, enabled=False)
        end = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)
        ending = await client.crons.create("steps", schedule=EVERY_SECOND, end_time=end)
        assert off["next_run_date"] is None

        async def ended() -> bool:
            cron = await store.get_cron(ending["cron_id"])
            assert cron is not None
            return cron.next_run_at is None and cron.firing_at is None

        await eventually(ended, what="the cron with an end time ended")

        async def witness_fired_after_the_end() -> bool:
            made = await cron_runs(store, witness["cron_id"])
            return any(tick > end for tick, _ in made)

        await eventually(witness_fired_after_the_end, what="the witness fired past the end")
        await client.crons.delete(witness["cron_id"])
        assert await cron_runs(store, off["cron_id"]) == []
        made = await cron_runs(store, ending["cron_id"])
        assert made and all(tick <= end for tick, _ in made)


async def test_ticks_missed_while_nothing_ran_fire_once_for_the_latest(store: Store) -> None:
    settings = make_settings(cron_interval=0.2)
    async with serve(store, settings, with_worker=False) as srv:  # nothing is running
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        cron = await client.crons.create_for_thread(thread, "steps", schedule=YEARLY)
        await set_cron_due(store, cron["cron_id"], dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    async with serve(store, settings) as srv:  # a worker is back
        client = srv.sdk()

        async def fired() -> bool:
            stored = await store.get_cron(cron["cron_id"])
            assert stored is not None
            return (
                stored.firing_at is None
                and stored.next_run_at is not None
                and (stored.next_run_at.year > 2020)
            )

        await eventually(fired, what="the missed ticks handled")
        now = dt.datetime.now(dt.UTC)
        made = await cron_runs(store, cron["cron_id"])
        assert [tick for tick, _ in made] == [dt.datetime(now.year, 1, 1, tzinfo=dt.UTC)]
        (listed,) = await client.crons.search()
        next_year = dt.datetime(now.year + 1, 1, 1, tzinfo=dt.UTC)
        assert dt.datetime.fromisoformat(listed["next_run_date"]) == next_year
        (run,) = await client.runs.list(thread)
        assert run["metadata"]["cron_id"] == cron["cron_id"]


async def test_info_says_crons(store: Store) -> None:
    async with serve(store) as srv:
        assert (await srv.client.get("/info")).json()["flags"]["crons"] is True
