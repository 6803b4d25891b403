"""Compensation: a run that ends cancelled or failed after its effects undoes them, latest
first, each once (``runtime/compensation.py``). The crashes are in
``test_compensation_crash.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from outlast.nodes.effects import NotImportable, effect
from outlast.store import Store
from tests.compensation_graphs import desk_lines
from tests.harness import (
    answer,
    collect,
    make_settings,
    post_run,
    scrape,
    serve,
    total,
    wait_result,
    wait_status,
)

NAME = "outlast_compensations_total"


def _trip(desk: Path, **conf: Any) -> dict[str, Any]:
    return {"graph": "trip", "input": {}, "config": {"configurable": {"desk": str(desk), **conf}}}


def _ops(desk: Path) -> list[tuple[str, str]]:
    return [(x["op"], x.get("item") or x["booking"].split("-")[0]) for x in desk_lines(desk)]


async def test_a_failed_run_undoes_its_bookings_latest_first_and_says_so(
    store: Store, tmp_path: Path
) -> None:
    desk = tmp_path / "desk.jsonl"
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk, then="fail"))
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        assert final["error"]["type"] == "RuntimeError"
        assert "car rental" in final["error"]["message"]
        # the email is not undone: it declared no compensation
        assert _ops(desk) == [
            ("book", "flight"),
            ("email", "flight"),
            ("book", "hotel"),
            ("unbook", "hotel"),
            ("unbook", "flight"),
        ]
        done = final["error"]["compensated"]
        assert [(c["tool"], c["by"], c["status"], c["calls"]) for c in done] == [
            ("book", "unbook", "done", 1),
            ("book", "unbook", "done", 1),
        ]
        ledger = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
        by_key = {e["key"]: e for e in ledger}
        undos = [e for e in ledger if e["compensates"]]
        assert len(undos) == 2 and all(e["status"] == "done" for e in undos)
        assert {by_key[u["compensates"]]["tool"] for u in undos} == {"book"}
        # the bookings declared their undoing, the email none (by tool: the email and the
        # hotel's booking can start within one tick of SQLite's millisecond clock)
        done_first = sorted((e["tool"], e["compensable"]) for e in ledger if not e["compensates"])
        assert done_first == [("book", True), ("book", True), ("send_confirmation", False)]
        assert {u["key"] for u in undos} == {"undo:" + u["compensates"] for u in undos}
        # each undoing got the key of its own row, which a desk can deduplicate by
        assert {x["key"] for x in desk_lines(desk) if x["op"] == "unbook"} == {
            u["key"] for u in undos
        }
        events = await collect(srv.client, run["id"])
        compensated = [e.data["data"] for e in events if e.event == "effect.compensated"]
        assert [c["effect_tool"] for c in compensated] == ["book", "book"]
        assert [c["compensates"] for c in compensated] == [c["effect"] for c in done]
        assert events[-1].event == "run.failed"
        assert events[-1].data["data"]["error"]["compensated"] == done


async def test_a_waiting_run_cancelled_undoes_its_bookings(store: Store, tmp_path: Path) -> None:
    desk = tmp_path / "desk.jsonl"
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk, then="wait"))
        await wait_status(srv.client, run["id"], "waiting")
        cancel = await srv.client.post(f"/v1/runs/{run['id']}/cancel", json={"reason": "no trip"})
        assert cancel.status_code == 202 and cancel.json()["status"] == "cancelling"
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "cancelled"
        assert final["error"]["reason"] == "no trip"
        assert [c["status"] for c in final["error"]["compensated"]] == ["done", "done"]
        assert _ops(desk)[-2:] == [("unbook", "hotel"), ("unbook", "flight")]
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert types[-1] == "run.cancelled" and types.count("effect.compensated") == 2
        assert "run.cancelling" in types


async def test_an_effect_that_never_happened_is_not_undone(store: Store, tmp_path: Path) -> None:
    desk = tmp_path / "desk.jsonl"
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk, hotel_fails=True))
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        assert _ops(desk) == [("book", "flight"), ("email", "flight"), ("unbook", "flight")]
        assert len(final["error"]["compensated"]) == 1


async def test_a_completed_run_undoes_nothing(store: Store, tmp_path: Path) -> None:
    desk = tmp_path / "desk.jsonl"
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk))
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed"
        assert [op for op, _ in _ops(desk)] == ["book", "email", "book"]


async def test_a_compensation_that_keeps_failing_asks_a_person(
    store: Store, tmp_path: Path
) -> None:
    desk = tmp_path / "desk.jsonl"
    Path(str(desk) + ".unbook_fails").write_text("6")  # three calls, then three more
    settings = make_settings(compensation_attempts=3, compensation_backoff=0.0)
    async with serve(store, settings) as srv:
        before = await scrape(srv.client)
        run = await post_run(srv.client, **_trip(desk, then="fail"))
        snap = await wait_status(srv.client, run["id"], "waiting")
        wait = snap["wait"]
        assert wait["kind"] == "reconciliation"
        assert wait["object"]["compensation"] == "unbook"
        assert "ConnectionError" in wait["object"]["error"]
        assert not [x for x in desk_lines(desk) if x["op"] == "unbook"]
        # the wrong shape is refused and changes nothing
        bad = await answer(srv, run["id"], wait["id"], {"undone": "yes"})
        assert bad.status_code == 422
        assert (await srv.client.get(f"/v1/runs/{run['id']}")).json()["status"] == "waiting"
        # "try again": two more failures, a new wait
        assert (await answer(srv, run["id"], wait["id"], {"happened": False})).status_code == 202

        def other(snap: dict[str, Any]) -> bool:
            return snap["status"] == "waiting" and snap["wait"]["id"] != wait["id"]

        from tests.harness import until_snapshot

        second = (await until_snapshot(srv.client, run["id"], other))["wait"]
        # undone by hand, says the person; then the flight's compensation works
        done = await answer(srv, run["id"], second["id"], {"happened": True, "result": "phoned"})
        assert done.status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
        undone = final["error"]["compensated"]
        assert [c["status"] for c in undone] == ["done", "done"]
        assert _ops(desk)[-1] == ("unbook", "flight")
        assert len([x for x in desk_lines(desk) if x["op"] == "unbook"]) == 1  # the hotel by hand
        ledger = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
        hotel = next(e for e in ledger if e["compensates"] and e["result"] == "phoned")
        assert hotel["calls"] == 6  # three, then three more, then recorded by hand
        events = await collect(srv.client, run["id"])
        by_hand = [e.data["data"] for e in events if e.event == "effect.compensated"]
        assert [bool(d.get("reconciled")) for d in by_hand] == [True, False]
        after = await scrape(srv.client)
        counts = {
            outcome: total(after, NAME, outcome=outcome) - total(before, NAME, outcome=outcome)
            for outcome in ("done", "failed", "asked", "by_hand")
        }
        assert counts == {"done": 1, "failed": 6, "asked": 2, "by_hand": 1}


def test_a_compensation_must_be_importable_by_name() -> None:
    def local_undo(result: Any, *, idempotency_key: str) -> None:
        return None

    with pytest.raises(NotImportable, match="top level of a module"):
        effect(idempotent=True, compensate=local_undo)
    with pytest.raises(NotImportable):
        effect(idempotent=True, compensate=lambda *a, **k: None)


async def test_a_run_cancelled_in_flight_undoes_its_bookings(store: Store, tmp_path: Path) -> None:
    desk = tmp_path / "desk.jsonl"
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk, then="sleep"))

        def booked() -> bool:
            return [op for op, _ in _ops(desk)].count("book") == 2

        from tests.harness import eventually

        await eventually(booked, what="both bookings")
        cancel = await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        assert cancel.json()["status"] == "cancelling"
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "cancelled" and len(final["error"]["compensated"]) == 2
        assert _ops(desk)[-2:] == [("unbook", "hotel"), ("unbook", "flight")]


async def test_a_compensation_that_never_answers_times_out(store: Store, tmp_path: Path) -> None:
    desk = tmp_path / "desk.jsonl"
    Path(str(desk) + ".unbook_hangs").touch()
    settings = make_settings(
        compensation_attempts=1, compensation_backoff=0.0, compensation_timeout=0.2
    )
    async with serve(store, settings) as srv:
        run = await post_run(srv.client, **_trip(desk, then="fail"))
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert wait["kind"] == "reconciliation"
        assert wait["object"]["error"] == "TimeoutError: no answer in 0.2 s"


@pytest.mark.parametrize("happened", [True, False])
async def test_a_booking_in_flight_at_the_cancel_is_asked_about(
    store: Store, tmp_path: Path, happened: bool
) -> None:
    """The hotel booked but never answered; the run is cancelled meanwhile. Nobody knows
    whether it happened, so a person is asked, then it is undone or recorded as not done."""
    desk = tmp_path / "desk.jsonl"
    Path(str(desk) + ".hotel_hangs").touch()
    async with serve(store) as srv:
        run = await post_run(srv.client, **_trip(desk))
        from tests.harness import eventually

        await eventually(lambda: _ops(desk)[-1:] == [("book", "hotel")], what="the hotel call")
        await srv.client.post(f"/v1/runs/{run['id']}/cancel")
        wait = (await wait_status(srv.client, run["id"], "waiting"))["wait"]
        assert wait["kind"] == "reconciliation" and wait["object"]["question"] == "in_flight"
        assert wait["object"]["args"]["args"] == ["hotel"]
        assert not [op for op, _ in _ops(desk) if op == "unbook"]  # nothing undone yet
        said = {"happened": True, "result": {"booking": "hotel-by-phone"}}
        response = await answer(
            srv, run["id"], wait["id"], said if happened else {"happened": False}
        )
        assert response.status_code == 202
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "cancelled"
        undone = [x["booking"] for x in desk_lines(desk) if x["op"] == "unbook"]
        hotel = ["hotel-by-phone"] if happened else []
        assert undone[:-1] == hotel and undone[-1].startswith("flight-")
        ledger = (await srv.client.get(f"/v1/runs/{run['id']}/effects")).json()["effects"]
        booked = [e for e in ledger if e["tool"] == "book"]
        assert [e["status"] for e in booked] == ["done", "done" if happened else "failed"]
        assert len(final["error"]["compensated"]) == (2 if happened else 1)
