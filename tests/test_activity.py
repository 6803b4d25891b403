"""Activity leases: what a running run does now, renewed by signs of life, with health."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from outlast.store import Store
from tests.harness import collect, make_settings, post_run, serve, wait_result

# The supervisor is off here: these tests watch the lease itself expire.
FAST = {"activity_lease_ttl": 0.8, "activity_flush_interval": 0.1, "supervisor": False}


async def _until(
    client: httpx.AsyncClient, run_id: str, check: Any, timeout: float = 20
) -> dict[str, Any]:
    for _ in range(int(timeout / 0.02)):
        snap: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).json()
        if check(snap):
            return snap
        await asyncio.sleep(0.02)
    raise AssertionError(f"condition never held; last snapshot: {snap}")


async def test_activity_is_renewed_by_progress_then_goes_silent_then_stalled(
    store: Store, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    async with serve(store, make_settings(**FAST)) as srv:
        run = await post_run(
            srv.client,
            graph="busy",
            config={"configurable": {"beats": 12, "beat_every": 0.05, "gate": str(gate)}},
        )
        live = await _until(
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
        silent = await _until(srv.client, run["id"], lambda s: s["activity"]["health"] == "silent")
        stalled = await _until(
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
        run = await post_run(
            srv.client, graph="busy", config={"configurable": {"beats": 300, "beat_every": 0.002}}
        )
        await wait_result(srv.client, run["id"])
        events = await collect(srv.client, run["id"])
        activity = [e for e in events if e.event == "activity"]
        # ~0.7 s of work at one write per 0.1 s: a handful of events for 301 signals
        assert 1 <= len(activity) <= 15, len(activity)
        assert all(e.event != "custom" for e in events)  # signs of life are not chatter
        renewals = [e.data["data"]["renewals"] for e in activity]
        assert renewals == sorted(renewals) and renewals[-1] <= 301


async def test_a_fast_run_writes_no_activity(store: Store) -> None:
    async with serve(store, make_settings(**FAST)) as srv:
        run = await post_run(srv.client, input={"messages": []})
        await wait_result(srv.client, run["id"])
        assert "activity" not in [e.event for e in await collect(srv.client, run["id"])]


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
