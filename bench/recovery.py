"""Recovery: from SIGKILL of a worker holding 50 runs to all 50 running again elsewhere.

A worker that dies says nothing; its runs come back when its lease runs out (on database
time) and a reaper requeues them for another worker to claim. So the time to recover is
the lease TTL (minus however long ago the dead worker last renewed) plus the reaper's
interval plus a claim. The suite shortens the clocks to make this measurable in seconds:
``OUTLAST_WORKER_LEASE_TTL`` (``--lease-ttl``, 5 s), ``OUTLAST_WORKER_HEARTBEAT`` a third
of it, ``OUTLAST_REAPER_INTERVAL=0.5``; the activity lease is set long (120 s) so the
supervisor stays out of it.

A repetition: an API (``outlast serve --no-worker``) and worker A (``--concurrency`` 50)
take ``--recovery-runs`` runs of the ``slow`` graph (one node sleeping 60 s); once all of
them are ``running`` on A, worker B starts and is ready (idle: there is nothing queued),
then A is SIGKILLed. Recovery is the time from the kill to the ``run.started`` event with
``attempt`` 2 of the last of the runs (its ``time`` is the database's clock at the claim;
same host, same clock), cross-checked by polling the table. Alongside: when the dead
leases expired and when the reaper requeued them (``run.requeued``). The runs are then
cancelled and B stopped.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import psycopg
from benchkit import Outlast, med, r, temp_database


def clocks(ttl: float) -> dict[str, str]:
    return {
        "OUTLAST_WORKER_LEASE_TTL": str(ttl),
        "OUTLAST_WORKER_HEARTBEAT": str(round(ttl / 3, 3)),
        "OUTLAST_REAPER_INTERVAL": "0.5",
        "OUTLAST_ACTIVITY_LEASE_TTL": "120",
    }


async def scalar(conn: psycopg.AsyncConnection[Any], statement: str, *params: Any) -> Any:
    cur = await conn.execute(statement, params)  # type: ignore[arg-type]
    row = await cur.fetchone()
    return row[0] if row else None


async def until(
    conn: psycopg.AsyncConnection[Any], ids: list[str], condition: str, limit: float
) -> None:
    """Poll (every 20 ms) until every run of ``ids`` satisfies ``condition``."""
    statement = f"SELECT count(*) FROM outlast_runs WHERE id = ANY(%s::uuid[]) AND {condition}"
    deadline = time.monotonic() + limit
    while (got := await scalar(conn, statement, ids)) < len(ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{got} of {len(ids)} runs with {condition} after {limit:.0f} s")
        await asyncio.sleep(0.02)


async def once(api: Outlast, db: str, opts: Any, rep: int) -> dict[str, float]:
    n, env = opts.recovery_runs, clocks(opts.lease_ttl)
    a = Outlast(db, command="worker", concurrency=n, env=env)
    b: Outlast | None = None
    try:
        async with (
            httpx.AsyncClient(timeout=30.0) as client,
            await psycopg.AsyncConnection.connect(db, autocommit=True) as conn,
        ):
            await a.ready()
            body = {"graph": "slow", "input": {}, "config": {"configurable": {"step_delay": 60}}}
            ids = []
            for _ in range(n):
                reply = await client.post(f"{api.base}/v1/runs", json=body)
                ids.append(reply.json()["id"])
            await until(conn, ids, "status = 'running' AND attempts = 1", 60)
            b = Outlast(db, command="worker", concurrency=n, env=env)
            await b.ready()
            await asyncio.sleep(0.5)
            lease_end = await scalar(
                conn,
                "SELECT extract(epoch FROM max(lease_expires_at)) FROM outlast_runs "
                "WHERE id = ANY(%s::uuid[])",
                ids,
            )
            killed = time.time()
            a.kill()
            await until(conn, ids, "status = 'running' AND attempts = 2", opts.lease_ttl + 60)
            polled = time.time() - killed
            requeued, restarted = await (
                await conn.execute(
                    "SELECT extract(epoch FROM max(created_at) FILTER "
                    "(WHERE type = 'run.requeued')), extract(epoch FROM max(created_at) FILTER "
                    "(WHERE type = 'run.started' AND (data->>'attempt')::int = 2)) "
                    "FROM outlast_events WHERE run_id = ANY(%s::uuid[])",
                    (ids,),
                )
            ).fetchone()  # type: ignore[union-attr]
            for run_id in ids:
                await client.post(f"{api.base}/v1/runs/{run_id}/cancel", json={})
            await until(conn, ids, "status = 'cancelled'", 60)
    finally:
        a.kill()
        a.stop()  # already dead: this only removes its log
        if b is not None:
            b.stop()
    out = {
        "recovered_s": r(float(restarted) - killed, 3),
        "recovered_polled_s": r(polled, 3),
        "leases_expired_after_s": r(float(lease_end) - killed, 3),
        "requeued_after_s": r(float(requeued) - killed, 3),
    }
    print(f"  recovery {rep + 1}/{opts.repeat}: {out}")
    return out


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    async with temp_database(admin_url) as db:
        api = Outlast(db, no_worker=True, env=clocks(opts.lease_ttl))
        try:
            await api.ready()
            reps = [await once(api, db, opts, rep) for rep in range(opts.repeat)]
        finally:
            api.stop()
    return {
        "runs": opts.recovery_runs,
        "lease_ttl_s": opts.lease_ttl,
        "heartbeat_s": round(opts.lease_ttl / 3, 3),
        "reaper_interval_s": 0.5,
        "recovered_s": r(med([x["recovered_s"] for x in reps]), 3),
        "recovered_worst_s": r(max(x["recovered_s"] for x in reps), 3),
        "leases_expired_after_s": r(med([x["leases_expired_after_s"] for x in reps]), 3),
        "requeued_after_s": r(med([x["requeued_after_s"] for x in reps]), 3),
        "repetitions": reps,
    }
