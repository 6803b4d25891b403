"""Crons across real processes: two ``outlast serve`` on one Postgres database fire each
tick once between them, and a server SIGKILLed between a tick's claim and its run's
acceptance (or just after the acceptance, before the tick is recorded) leaves exactly
one run for the tick once a server is back."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest
from langgraph_sdk import get_client

from outlast import faults
from outlast.store import Store
from outlast.store.crons import Tick
from outlast.store.postgres import PostgresStore
from tests.harness import eventually, scrape, total
from tests.procs import kill, start_server
from tests.util import cron_runs

pytestmark = pytest.mark.slow

EVERY_SECOND = "* * * * * *"


async def test_two_servers_on_one_database_fire_each_tick_once(
    pg: PostgresStore, pg_url: str, tmp_path: Path
) -> None:
    # a claim is held 10 s: on a loaded machine a slow acceptance is not fired again by
    # the other server, which would be right (into the same run) but not what is counted
    env = {"OUTLAST_WORKER_LEASE_TTL": "10"}
    servers = [start_server(pg_url, tmp_path / f"s{i}.log", **env) for i in (1, 2)]
    client = get_client(url=servers[0][1])
    try:
        thread = (await client.threads.create())["thread_id"]
        cron = await client.crons.create_for_thread(
            thread, "steps", schedule=EVERY_SECOND, input={"n": 1}
        )

        async def eight() -> bool:
            return len(await cron_runs(pg, cron["cron_id"])) >= 8

        await eventually(eight, what="eight ticks fired")
        await client.crons.update(cron["cron_id"], enabled=False)

        async def settled() -> bool:
            stored = await pg.get_cron(cron["cron_id"])
            return stored is not None and stored.firing_at is None

        await eventually(settled, what="the last tick claimed recorded as fired")
        made = await cron_runs(pg, cron["cron_id"])
        fired = []
        for _, url in servers:
            async with httpx.AsyncClient(base_url=url) as http:
                fired.append(total(await scrape(http), "outlast_cron_ticks_total", outcome="fired"))
        # each tick's run was made by one server, once: none was fired twice, not even
        # into the same run by its idempotency key
        assert sum(fired) == len(made) >= 8, (fired, len(made))
        ticks = [tick for tick, _ in made]
        assert ticks == sorted(set(ticks))
    finally:
        await client.aclose()
        for proc, _ in servers:
            kill(proc, signal.SIGTERM)


@pytest.mark.parametrize("point", [faults.CRON_BEFORE_FIRE, faults.CRON_AFTER_FIRE])
async def test_a_sigkill_between_the_tick_and_its_run_leaves_one_run(
    store: Store, db_url: str, tmp_path: Path, point: str
) -> None:
    first, url = start_server(db_url, tmp_path / "s1.log", OUTLAST_FAULTS=point)
    port = int(url.rsplit(":", 1)[1])
    second = None
    client = get_client(url=url)
    try:
        thread = (await client.threads.create())["thread_id"]
        cron = await client.crons.create_for_thread(
            thread, "steps", schedule=EVERY_SECOND, input={"n": 1}
        )
        assert await asyncio.to_thread(first.wait, 60) == -signal.SIGKILL
        claimed = await store.get_cron(cron["cron_id"])
        assert claimed is not None and claimed.firing_at is not None  # the tick it died in
        tick = Tick(claimed, claimed.firing_at)
        before = await store.get_run_by_key("", tick.key)
        assert (before is not None) is (point == faults.CRON_AFTER_FIRE)

        second, _ = start_server(db_url, tmp_path / "s2.log", port=port)

        async def refired() -> bool:
            stored = await store.get_cron(cron["cron_id"])
            assert stored is not None
            return stored.firing_at != tick.at and any(
                t == tick.at for t, _ in await cron_runs(store, cron["cron_id"])
            )

        await eventually(refired, what="the tick fired again by the restarted server")
        await client.crons.update(cron["cron_id"], enabled=False)
        made = await cron_runs(store, cron["cron_id"])
        at_tick = [run for t, run in made if t == tick.at]
        assert len(at_tick) == 1, made  # exactly one run for the tick
        if before is not None:
            assert at_tick[0].id == before.id  # the run made before the SIGKILL
        assert made[0][0] == tick.at  # and no tick of the schedule went before it
        log = (tmp_path / "s2.log").read_text()
        assert f"tick {tick.at.isoformat()} fired run {at_tick[0].id}" in log
    finally:
        await client.aclose()
        kill(first, signal.SIGKILL)
        if second is not None:
            kill(second, signal.SIGTERM)
