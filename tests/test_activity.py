"""Activity leases: what a running run does now, renewed by signs of life, with health."""

from __future__ import annotations

import time
from pathlib import Path

from outlast.store import Store
from outlast.vocabulary import EventType, RunStatus
from tests.harness import collect, make_settings, post_run, serve, until_snapshot, wait_result

# The supervisor is off here: these tests watch the lease itself expire.
FAST = {"activity_lease_ttl": 0.8, "activity_flush_interval": 0.1, "supervisor": False}


async def test_activity_is_renewed_by_progress_then_goes_silent_then_stalled(
    store: Store, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    # A longer lease than FAST's: "silent" lasts half of it, and the test must catch the
    # snapshot inside that window even when the worker's writes come late on a busy machine.
    async with serve(store, make_settings(**{**FAST, "activity_lease_ttl": 3.0})) as srv:
        run = await post_run(
            srv.client,
            graph="busy",
            config={"configurable": {"beats": 12, "beat_every": 0.05, "gate": str(gate)}},
        )
        live = await until_snapshot(
            srv.client, run["id"], lambda s: (s.get("activity") or {}).get("renewals", 0) >= 3
        )
        activity = live["activity"]
        assert activity["name"] == "wait" and activity["kind"] == "node"
        assert activity["health"] == "live" and activity["note"].startswith("step ")
        assert set(activity) >= {
            "kind",
            "name",
            "started_at",
            "last_signal_at",
            "lease_expires_at",
            "renewals",
            "health",
        }
        # no more signals: the lease runs out, and expiry stops nothing by itself
        silent = await until_snapshot(
            srv.client, run["id"], lambda s: s["activity"]["health"] == "silent"
        )
        stalled = await until_snapshot(
            srv.client, run["id"], lambda s: s["activity"]["health"] == "stalled"
        )
        assert stalled["status"] == "running"
        assert stalled["activity"]["renewals"] == silent["activity"]["renewals"] == 13
        gate.write_text("open")
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "completed" and final["activity"] is None
        events = await collect(srv.client, run["id"])
        health = [e.data["data"]["health"] for e in events if e.event == "activity"]
        assert health[0] == "live" and health[-1] == "stalled" and "silent" in health


async def test_activity_events_are_bounded_not_one_per_signal(store: Store) -> None:
    async with serve(store, make_settings(**FAST)) as srv:
        started = time.monotonic()
        run = await post_run(
            srv.client, graph="busy", config={"configurable": {"beats": 300, "beat_every": 0.002}}
        )
        await wait_result(srv.client, run["id"])
        took = time.monotonic() - started  # at least the run's life, however slow the machine
        events = await collect(srv.client, run["id"])
        activity = [e for e in events if e.event == EventType.ACTIVITY]
        # At most one write per flush interval while the run lived (the bound grows with
        # a slow machine's longer run); one per signal would be 301.
        most = int(took / FAST["activity_flush_interval"]) + 2
        assert 1 <= len(activity) <= most < 301, (len(activity), took)
        assert all(e.event != "custom" for e in events)  # signs of life are not chatter
        renewals = [e.data["data"]["renewals"] for e in activity]
        assert renewals == sorted(renewals) and renewals[-1] <= 301


async def test_a_run_that_ends_within_the_flush_interval_writes_no_activity(
    store: Store,
) -> None:
    """Activity writes are coalesced over the flush interval, not made as nodes start. The
    interval (and the lease, which also paces the writes) is set far beyond any run, so
    the run ends within it however slow the machine is; an activity written on the
    first sign of life, before the interval, would show here."""
    hour = {"activity_lease_ttl": 3600.0, "activity_flush_interval": 3600.0}
    async with serve(store, make_settings(**{**FAST, **hour})) as srv:
        run = await post_run(srv.client, input={"messages": []})
        final = await wait_result(srv.client, run["id"])
        types = [e.event for e in await collect(srv.client, run["id"])]
        assert final["status"] == RunStatus.COMPLETED and EventType.NODE_UPDATED in types
        assert EventType.ACTIVITY not in types


async def test_langgraph_runtime_heartbeat_renews_the_lease(store: Store) -> None:
    async with serve(store, make_settings(**FAST)) as srv:
        run = await post_run(srv.client, graph="pulses", config={"configurable": {"beats": 8}})
        await wait_result(srv.client, run["id"])
        activity = [
            e.data["data"] for e in await collect(srv.client, run["id"]) if e.event == "activity"
        ]
        by_node: dict[str, int] = {}
        for a in activity:
            by_node[a["name"]] = max(by_node.get(a["name"], 0), a["renewals"])
        # 8 beats in the async node, 5 from the thread of the sync node
        assert by_node.get("pulse", 0) >= 4 and by_node.get("sync_pulse", 0) >= 2, by_node
