"""Push notifications under load: ``--runs`` runs (1,000), each notifying once.

One ``outlast serve`` (its embedded worker runs the graphs and drains the outbox) on a
fresh database of each backend; a subscription to ``run.completed`` pointing at a
receiver in this process (uvicorn + Starlette, answering 200 at once). All the runs are
accepted up front, so the worker drains a queue while its deliverer drains the outbox:
both compete for the same process, as they do in production.

Figures, per backend:

- ``delivered``: distinct ``webhook-id`` values received (must be ``runs``), and
  ``duplicates``: requests beyond one per id (none is expected without a crash);
- ``latency_ms``: the receiver's clock at arrival minus the event's ``timestamp`` in the
  payload (the database's clock when the trigger wrote the delivery; same machine, same
  clock), p50 / p99 / max;
- ``drain_s``: from the last run completing (its event's time) to the outbox holding no
  pending delivery; ``total_s``: from the first acceptance to the last delivery.

    .venv/bin/python bench/webhooks.py                   # 1,000 runs, both backends
    .venv/bin/python bench/webhooks.py --runs 200 --backend sqlite

Writes ``bench/results/webhooks.json`` and ``bench/results/webhooks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from benchkit import RESULTS, Outlast, latency_summary, machine, now_iso, r, temp_database
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ENV = {"OUTLAST_WEBHOOK_ALLOW_PRIVATE": "1", "OUTLAST_WEBHOOK_POLL": "1"}


class Receiver:
    def __init__(self) -> None:
        self.arrivals: list[tuple[float, str, float]] = []  # (at, webhook-id, event time)

        async def hook(request: Request) -> Response:
            at = time.time()
            payload = json.loads(await request.body())
            stamp = dt.datetime.fromisoformat(payload["timestamp"].replace("Z", "+00:00"))
            self.arrivals.append((at, request.headers["webhook-id"], stamp.timestamp()))
            return Response(status_code=200)

        app = Starlette(routes=[Route("/hook", hook, methods=["POST"])])
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        self.task = asyncio.create_task(self.server.serve())
        while not self.server.started:  # noqa: ASYNC110 (uvicorn sets a flag, no event)
            await asyncio.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hook"

    async def stop(self) -> None:
        self.server.should_exit = True
        if self.task is not None:
            await self.task


async def one(db: str, runs: int, backend: str) -> dict[str, Any]:
    receiver = Receiver()
    url = await receiver.start()
    server = Outlast(db, env=ENV)
    try:
        await server.ready()
        async with httpx.AsyncClient(base_url=server.base, timeout=60) as client:
            made = await client.post("/v1/webhooks", json={"url": url, "events": ["run.completed"]})
            made.raise_for_status()
            hook = made.json()["id"]
            started = time.time()
            body = {"graph": "ten", "input": {}}
            ids = [(await client.post("/v1/runs", json=body)).json()["id"] for _ in range(runs)]
            deadline = time.monotonic() + 600
            while len({a[1] for a in receiver.arrivals}) < runs:
                server.check_alive()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{len(receiver.arrivals)} of {runs} delivered")
                await asyncio.sleep(0.2)
            while True:  # the outbox drains: nothing pending or being delivered
                listed = await client.get(
                    f"/v1/webhooks/{hook}/deliveries", params={"status": "pending"}
                )
                if not listed.json()["deliveries"]:
                    break
                await asyncio.sleep(0.05)
            drained = time.time()
    finally:
        server.stop()
        await receiver.stop()
    arrivals = receiver.arrivals
    latencies = [(at - event) * 1000 for at, _, event in arrivals]
    last_event = max(event for _, _, event in arrivals)
    out = {
        "backend": backend,
        "runs": len(ids),
        "delivered": len({a[1] for a in arrivals}),
        "duplicates": len(arrivals) - len({a[1] for a in arrivals}),
        "latency_ms": latency_summary(latencies),
        "drain_s": r(drained - last_event, 3),
        "total_s": r(max(at for at, _, _ in arrivals) - started, 2),
    }
    print(f"  {backend}: {out}")
    return out


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--backend", default="postgres,sqlite")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    opts = parser.parse_args(argv)
    results = []
    for backend in opts.backend.split(","):
        print(f"webhooks: {opts.runs} runs on {backend}")
        if backend == "postgres":
            async with temp_database(opts.database_url) as db:
                results.append(await one(db, opts.runs, backend))
        else:
            with tempfile.TemporaryDirectory() as folder:
                db = f"sqlite:///{Path(folder) / 'outlast.db'}"
                results.append(await one(db, opts.runs, backend))
    doc = {"taken_at": now_iso(), "machine": machine(), "results": results}
    (RESULTS / "webhooks.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        f"# Push notifications: {opts.runs} runs, each notifying once",
        "",
        f"Taken {doc['taken_at']} ({doc['machine']['cpus']} cores, load "
        f"{doc['machine']['load_average_at_start']} at start). `bench/webhooks.py`; "
        "what each figure means is in its docstring.",
        "",
        "| backend | delivered | duplicates | event → delivery p50 | p99 | max | drain | total |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in results:
        lat = x["latency_ms"]
        lines.append(
            f"| {x['backend']} | {x['delivered']} / {x['runs']} | {x['duplicates']} | "
            f"{lat['p50_ms']:.0f} ms | {lat['p99_ms']:.0f} ms | {lat['max_ms']:.0f} ms | "
            f"{x['drain_s']:.2f} s | {x['total_s']:.1f} s |"
        )
    (RESULTS / "webhooks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    asyncio.run(main())
