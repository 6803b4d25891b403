"""Streams: how soon 100 attached clients see an event, and how fast a stored log replays.

Live latency. The API (``outlast serve --no-worker``) and a worker (``outlast worker``) run
as two processes, as they would when scaled out. A run of the ``emitter`` graph first parks
on a human wait; ``--stream-clients`` SSE clients attach to it (``?after=0``) and read up to
the end of the log; then the wait is answered and the run emits ``--stream-events`` custom
events, ``--stream-interval`` seconds apart, each carrying ``time.time()`` at emission. For
every custom event each client receives, two latencies are recorded:

- append → receipt: receipt time minus the envelope's ``time``, which is the database's
  clock when the row was inserted (``clock_timestamp()``). This is the event log's own
  delivery path: commit, ``NOTIFY``, the API's listener, each stream reading the table,
  SSE framing, the socket. The aim (p99 < 25 ms with 100 clients) is about this one.
- emit → receipt: from the node's ``writer(...)`` call, so it also holds the worker's
  event sink and the insert itself.

Everything runs on one host, so the clocks are one clock. The client is one asyncio process
with a lean SSE parser (benchkit.SseStream); its receipt time is taken when the chunk is
read, so a burst of 100 chunks adds the client's own queueing (some µs per chunk).

Replay. A run with ``--replay-events`` stored events is written directly through the
store API (``PostgresStore.create_run``, ``claim``, ``append`` in batches of 500 under the
claimed lease, ``finish``), before any worker exists. One client then reads
``GET /v1/runs/{id}/events?after=0`` to the terminal event: events per second, from the
request to the last event, as a client reattaching from the beginning would see it.

The live measurement is taken once more (one repetition) with ``--stream-few`` clients: the
difference to 100 is what the fan-out itself costs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
from benchkit import (
    CpuMeter,
    Outlast,
    SseStream,
    envelope_time,
    latency_summary,
    med,
    r,
    temp_database,
)

from outlast.config import Settings
from outlast.store import EventDraft, Lease, NewRun, RunStatus, make_store

REPLAY_BATCH = 500


async def write_log(db_url: str, events: int) -> str:
    """A completed run with ``events`` custom events, written through the store API."""
    store = make_store(Settings(database_url=db_url))
    await store.open()
    try:
        run_id = str(uuid.uuid4())
        new = NewRun(
            id=run_id,
            thread_id=run_id,
            graph="ten",
            input={"steps": []},
            config={},
            metadata={"bench": "replay"},
            budget=None,
            idempotency_key=None,
            fingerprint="bench-replay",
            max_attempts=1,
        )
        await store.create_run(new)
        claimed = await store.claim("bench-replay", ttl=3600, limit=1)
        assert [c.id for c in claimed] == [run_id], "the replay run must be the only one queued"
        lease = Lease(run_id, "bench-replay", claimed[0].lease_epoch)
        for start in range(0, events, REPLAY_BATCH):
            drafts = [
                EventDraft("custom", {"ns": [], "data": {"i": i, "t": time.time()}})
                for i in range(start, min(events, start + REPLAY_BATCH))
            ]
            await store.append(lease, drafts)
        done = EventDraft("run.completed", {"status": "completed"})
        await store.finish(lease, RunStatus.COMPLETED, done, result={"replay": events})
        return run_id
    finally:
        await store.close()


async def replay_once(base: str, run_id: str) -> tuple[float, int]:
    """(seconds, events) for one client reading the whole log from ``after=0``."""
    start = time.perf_counter()
    count = 0
    async for event in SseStream(base, f"/v1/runs/{run_id}/events?after=0").events():
        if event.id is not None:
            count += 1
        if event.event == "run.completed":
            break
    return time.perf_counter() - start, count


async def wait_status(client: httpx.AsyncClient, base: str, run_id: str, status: str) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        snap = (await client.get(f"{base}/v1/runs/{run_id}")).json()
        if snap["status"] == status:
            return snap
        await asyncio.sleep(0.05)
    raise RuntimeError(f"run {run_id} not {status} after 60 s: {snap['status']}")


class Follower:
    """One attached client: the latencies of the custom events it received."""

    def __init__(self, base: str, run_id: str, attached_seq: int) -> None:
        self.stream = SseStream(base, f"/v1/runs/{run_id}/events?after=0")
        self.attached_seq = attached_seq
        self.caught_up = asyncio.Event()
        self.from_append: list[float] = []
        self.from_emit: list[float] = []
        self.emit_to_append: list[float] = []

    async def follow(self) -> None:
        async for event in self.stream.events():
            if event.id is None:
                continue
            if int(event.id) >= self.attached_seq:
                self.caught_up.set()
            if event.event == "custom":
                payload = event.payload()
                appended = envelope_time(payload)
                emitted = payload["data"]["data"]["t"]
                self.from_append.append((event.received - appended) * 1000)
                self.from_emit.append((event.received - emitted) * 1000)
                self.emit_to_append.append((appended - emitted) * 1000)
            elif event.event in ("run.completed", "run.failed", "run.cancelled"):
                return


async def live_once(
    client: httpx.AsyncClient, base: str, opts: Any, clients: int
) -> dict[str, Any]:
    config = {"configurable": {"count": opts.stream_events, "interval": opts.stream_interval}}
    body = {"graph": "emitter", "input": {}, "config": config}
    run_id = (await client.post(f"{base}/v1/runs", json=body)).json()["id"]
    snap = await wait_status(client, base, run_id, "waiting")
    followers = [Follower(base, run_id, snap["last_seq"]) for _ in range(clients)]
    tasks = [asyncio.create_task(f.follow()) for f in followers]
    try:
        await asyncio.wait_for(asyncio.gather(*(f.caught_up.wait() for f in followers)), 60)
        answer = {"wait_id": snap["wait"]["id"], "value": "go"}
        reply = await client.post(f"{base}/v1/runs/{run_id}/input", json=answer)
        reply.raise_for_status()
        budget = opts.stream_events * opts.stream_interval + 60
        await asyncio.wait_for(asyncio.gather(*tasks), budget)
    finally:
        for task in tasks:
            task.cancel()
    from_append = [x for f in followers for x in f.from_append]
    received = [len(f.from_append) for f in followers]
    return {
        "append_to_receipt": latency_summary(from_append),
        "emit_to_receipt": latency_summary([x for f in followers for x in f.from_emit]),
        "emit_to_append_p50_ms": r(med(followers[0].emit_to_append), 3),
        "deliveries": len(from_append),
        "every_client_got_every_event": min(received) == max(received) == opts.stream_events,
    }


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    async with temp_database(admin_url) as db:
        api = Outlast(db, no_worker=True)
        worker: Outlast | None = None
        try:
            await api.ready()
            # Replay first: no worker exists yet, so nothing but us claims the run.
            run_id = await write_log(db, opts.replay_events)
            rates = []
            for rep in range(opts.repeat + 1):  # the first read warms the server up
                seconds, count = await replay_once(api.base, run_id)
                if count != opts.replay_events + 3:  # + run.created, run.started, completed
                    raise RuntimeError(f"replay read {count} events of {opts.replay_events + 3}")
                if rep:
                    rates.append(count / seconds)
                    print(f"  replay {rep}/{opts.repeat}: {rates[-1]:.0f} events/s")
            worker = Outlast(db, command="worker", concurrency=10)
            await worker.ready()
            async with httpx.AsyncClient(timeout=60.0) as client:

                async def live(clients: int, label: str) -> dict[str, Any]:
                    meter = CpuMeter({"api": api.pid, "worker": worker.pid}, db).start()
                    out = await live_once(client, api.base, opts, clients)
                    used = meter.stop()
                    out["cpu_ms_per_delivery"] = {
                        k: r(1000 * v / max(1, out["deliveries"]), 4) for k, v in used.items()
                    }
                    a, e = out["append_to_receipt"], out["emit_to_receipt"]
                    print(
                        f"  stream {label}, {clients} clients: append→receipt p50 "
                        f"{a['p50_ms']:.1f} ms p99 {a['p99_ms']:.1f} ms; emit→receipt p50 "
                        f"{e['p50_ms']:.1f} ms p99 {e['p99_ms']:.1f} ms"
                    )
                    return out

                runs = [
                    await live(opts.stream_clients, f"{rep + 1}/{opts.repeat}")
                    for rep in range(opts.repeat)
                ]
                # Once with few clients: how much of the latency is the fan-out itself.
                few = await live(opts.stream_few, "with few clients")
        finally:
            if worker is not None:
                worker.stop()
            api.stop()

    def over(path: str, key: str) -> float:
        return r(med([run[path][key] for run in runs]))

    return {
        "clients": opts.stream_clients,
        "events_per_run": opts.stream_events,
        "interval_s": opts.stream_interval,
        "append_to_receipt_p50_ms": over("append_to_receipt", "p50_ms"),
        "append_to_receipt_p99_ms": over("append_to_receipt", "p99_ms"),
        "emit_to_receipt_p50_ms": over("emit_to_receipt", "p50_ms"),
        "emit_to_receipt_p99_ms": over("emit_to_receipt", "p99_ms"),
        "emit_to_append_p50_ms": r(med([run["emit_to_append_p50_ms"] for run in runs]), 3),
        "all_append_to_receipt_p99_ms": [run["append_to_receipt"]["p99_ms"] for run in runs],
        "every_client_got_every_event": all(run["every_client_got_every_event"] for run in runs),
        "cpu_ms_per_delivery": {
            k: r(med([run["cpu_ms_per_delivery"][k] for run in runs]), 4)
            for k in runs[0]["cpu_ms_per_delivery"]
        },
        "few_clients": {
            "clients": opts.stream_few,
            "append_to_receipt": few["append_to_receipt"],
            "cpu_ms_per_delivery": few["cpu_ms_per_delivery"],
        },
        "replay_events": opts.replay_events,
        "replay_events_per_s": r(med(rates), 0),
        "replay_all_events_per_s": [r(x, 0) for x in rates],
        "runs": runs,
    }
