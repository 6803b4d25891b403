"""Compensation seen from LangGraph's own client (``langgraph_sdk``): a rollback gives the
bookings back, whether asked by ``runs.cancel(action="rollback")`` or by a new run's
``multitask_strategy="rollback"``; the ``interrupt`` strategy keeps the thread's state for
the new run, and with it what the interrupted run booked. And the example ``booking``
graph, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from outlast.graph.booking import reservations
from outlast.store import Store
from tests.compensation_graphs import desk_lines
from tests.harness import eventually, make_settings, serve


def _ops(desk: Path) -> list[str]:
    return [x["op"] for x in desk_lines(desk)]


async def _booked(desk: Path) -> None:
    await eventually(lambda: _ops(desk).count("book") == 2, what="both bookings")


async def test_the_rollback_strategy_undoes_the_interrupt_strategy_keeps(
    store: Store, tmp_path: Path
) -> None:
    async with serve(store) as srv:
        client = srv.sdk()
        for strategy, undone in (("interrupt", 0), ("rollback", 2)):
            desk = tmp_path / f"{strategy}.jsonl"
            conf = {"configurable": {"desk": str(desk), "then": "sleep"}}
            thread = (await client.threads.create())["thread_id"]
            first = await client.runs.create(thread, "trip", input={}, config=conf)
            await _booked(desk)
            quick = {"configurable": {"desk": str(tmp_path / "other.jsonl")}}
            second = await client.runs.create(
                thread, "trip", input={}, config=quick, multitask_strategy=strategy
            )
            await client.runs.join(thread, second["run_id"])
            native = (await srv.client.get(f"/v1/runs/{first['run_id']}")).json()
            assert native["status"] == "cancelled", strategy
            assert _ops(desk).count("unbook") == undone, strategy
            assert len(native["error"].get("compensated", [])) == undone, strategy


async def test_cancel_with_rollback_gives_the_room_back(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    async with serve(store) as srv:
        client = srv.sdk()
        rooms = tmp_path / "rooms"
        config: Any = {"configurable": {"reservations": str(rooms)}}
        thread = (await client.threads.create())["thread_id"]
        run = await client.runs.create(
            thread, "booking", input={"room": "blue", "night": "2026-12-24"}, config=config
        )
        await client.runs.join(thread, run["run_id"])  # at the person's question
        (booked,) = reservations(rooms / "reservations.json").values()
        assert booked["status"] == "booked"
        state = await client.threads.get_state(thread)
        assert state["values"]["booking"]["booking"] == booked["booking"]
        await client.runs.cancel(thread, run["run_id"], action="rollback", wait=True)
        (after,) = reservations(rooms / "reservations.json").values()
        assert after["status"] == "cancelled"
        native = (await srv.client.get(f"/v1/runs/{run['run_id']}")).json()
        assert native["status"] == "cancelled"
        assert [c["by"] for c in native["error"]["compensated"]] == ["cancel_room"]


async def test_the_booking_example_kept_or_declined(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTLAST_WORKSPACE_ROOT", str(tmp_path))
    async with serve(store) as srv:
        client = srv.sdk()
        statuses = {}
        for keep in (True, False):
            rooms = tmp_path / f"rooms-{keep}"
            config: Any = {"configurable": {"reservations": str(rooms)}}
            thread = (await client.threads.create())["thread_id"]
            await client.runs.wait(thread, "booking", input={"room": "red"}, config=config)
            resumed = await client.runs.create(
                thread, "booking", command={"resume": keep}, config=config
            )
            await client.runs.join(thread, resumed["run_id"])
            (entry,) = reservations(rooms / "reservations.json").values()
            statuses[keep] = entry["status"]
        assert statuses == {True: "booked", False: "cancelled"}


async def test_a_compensation_a_person_must_settle_is_an_interrupt_there(
    store: Store, tmp_path: Path
) -> None:
    desk = tmp_path / "desk.jsonl"
    Path(str(desk) + ".unbook_fails").write_text("1")  # the hotel's cancel fails once
    settings = make_settings(compensation_attempts=1, compensation_backoff=0.0)
    async with serve(store, settings) as srv:
        client = srv.sdk()
        thread = (await client.threads.create())["thread_id"]
        conf = {"configurable": {"desk": str(desk), "then": "fail"}}
        run = await client.runs.create(thread, "trip", input={}, config=conf)
        await client.runs.join(thread, run["run_id"])
        shown = await client.threads.get(thread)
        assert shown["status"] == "interrupted"
        (asked,) = [i for items in shown["interrupts"].values() for i in items]
        value = asked["value"]["outlast_wait"]
        assert value["kind"] == "reconciliation" and value["object"]["compensation"] == "unbook"
        resumed = await client.runs.create(
            thread, "trip", command={"resume": {"happened": False}}, config=conf
        )
        await client.runs.join(thread, resumed["run_id"])
        native = (await srv.client.get(f"/v1/runs/{run['run_id']}")).json()
        assert native["status"] == "failed"
        assert [c["status"] for c in native["error"]["compensated"]] == ["done", "done"]
        assert _ops(desk).count("unbook") == 2


async def test_deleting_a_thread_undoes_what_its_runs_did(store: Store, tmp_path: Path) -> None:
    """A thread deleted under a running run that booked: the run is cancelled and kept
    until its worker has given the bookings back, while the thread is gone at once; a run
    that owes nothing goes with the thread (the other states: test_transitions.py)."""
    async with serve(store) as srv:
        client = srv.sdk()
        desk = tmp_path / "desk.jsonl"
        thread = (await client.threads.create())["thread_id"]
        conf = {"configurable": {"desk": str(desk), "then": "sleep"}}
        run = await client.runs.create(thread, "trip", input={}, config=conf)
        await _booked(desk)
        await client.threads.delete(thread)
        assert (await srv.client.get(f"/threads/{thread}")).status_code == 404

        async def undone() -> dict[str, Any] | None:
            native = (await srv.client.get(f"/v1/runs/{run['run_id']}")).json()
            return native if native.get("status") == "cancelled" else None

        native = await eventually(undone, what="the run cancelled, compensated")
        assert _ops(desk).count("unbook") == 2
        assert len(native["error"]["compensated"]) == 2
        assert native["error"]["reason"] == "its thread was deleted"
        # a run that booked nothing goes with its thread
        other = (await client.threads.create())["thread_id"]
        quiet = await client.runs.create(other, "slow", input={})
        await client.threads.delete(other)
        assert await store.get_run(quiet["run_id"]) is None
