"""Accept rate: ``POST /v1/runs`` with an ``Idempotency-Key`` per second, 32 clients at once.

Acceptance is what a client waits for before it has a run id: the request is validated,
the run row and its ``run.created`` event are inserted in one transaction (the key's unique
index taking part), and ``202`` comes back with the snapshot. The server runs with
``--no-worker`` so that acceptance alone is measured: nothing executes the runs, which
simply queue up. Each client holds one keep-alive connection and sends its next request
as soon as the previous one is answered (a closed loop), each with a new key.

A repetition sends ``--accept-requests`` requests after a warm-up; the rate is requests
over wall time, the latencies are per request as the client saw them. The CPU each
accepted run cost the server process, Postgres (all backends) and the client is measured
beside it, because on two shared cores the rate is mostly a question of CPU per request.

Beside it, the same load on two ``outlast serve --no-worker`` processes (the scale-out
deployment: any API process accepts any run), the clients split evenly between them,
alternated with the single process in each repetition. With one process a core sits
partly idle while Python is busy in the other; two use both.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from benchkit import (
    CpuMeter,
    Outlast,
    RawHttp,
    latency_summary,
    med,
    r,
    run_concurrently,
    temp_database,
)

BODY = {"graph": "ten", "input": {"steps": []}}


async def burst(
    base: str | list[str], clients: int, total: int, tag: str
) -> tuple[float, list[float]]:
    """``total`` acceptances by ``clients`` concurrent clients, spread over the servers
    at ``base``; (wall seconds, latencies ms)."""
    bases = [base] if isinstance(base, str) else base
    counter = itertools.count()
    latencies: list[float] = []

    async def client(k: int) -> None:
        http = RawHttp(bases[k % len(bases)])
        try:
            while (i := next(counter)) < total:
                start = time.perf_counter()
                status, _, body = await http.request(
                    "POST", "/v1/runs", BODY, {"idempotency-key": f"{tag}-{i}"}
                )
                latencies.append((time.perf_counter() - start) * 1000)
                if status != 202:
                    raise RuntimeError(f"POST /v1/runs answered {status}: {body[:300]!r}")
        finally:
            await http.close()

    start = time.perf_counter()
    await run_concurrently(clients, client)
    return time.perf_counter() - start, latencies


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    n, clients = opts.accept_requests, opts.accept_clients
    async with temp_database(admin_url) as db:
        server = Outlast(db, no_worker=True)
        second: Outlast | None = None
        try:
            await server.ready()
            second = Outlast(db, no_worker=True)
            await second.ready()
            pair = [server.base, second.base]
            await burst(server.base, clients, max(200, n // 10), "warm")
            await burst(pair, clients, max(200, n // 10), "warm2")
            rates: list[float] = []
            pair_rates: list[float] = []
            p50s: list[float] = []
            p99s: list[float] = []
            cpu: dict[str, list[float]] = {"server": [], "postgres": [], "client": []}
            for rep in range(opts.repeat):
                meter = CpuMeter({"server": server.pid}, db).start()
                wall, ms = await burst(server.base, clients, n, f"rep{rep}")
                used = meter.stop()
                rates.append(n / wall)
                summary = latency_summary(ms)
                p50s.append(summary["p50_ms"])
                p99s.append(summary["p99_ms"])
                for key in cpu:
                    cpu[key].append(1000 * used[key] / n)
                wall2, _ = await burst(pair, clients, n, f"pair{rep}")
                pair_rates.append(n / wall2)
                print(
                    f"  accept {rep + 1}/{opts.repeat}: {rates[-1]:.0f} runs/s, p50 "
                    f"{p50s[-1]:.1f} ms, p99 {p99s[-1]:.1f} ms; CPU per run: server "
                    f"{cpu['server'][-1]:.2f} ms, postgres {cpu['postgres'][-1]:.2f} ms, "
                    f"client {cpu['client'][-1]:.2f} ms; two API processes "
                    f"{pair_rates[-1]:.0f} runs/s"
                )
        finally:
            if second is not None:
                second.stop()
            server.stop()
    return {
        "runs_per_s": r(med(rates), 1),
        "p50_ms": r(med(p50s)),
        "p99_ms": r(med(p99s)),
        "all_runs_per_s": [r(x, 1) for x in rates],
        "all_p99_ms": [r(x) for x in p99s],
        "cpu_ms_per_accept": {k: r(med(v), 3) for k, v in cpu.items()},
        "two_processes_runs_per_s": r(med(pair_rates), 1),
        "two_processes_all": [r(x, 1) for x in pair_rates],
        "clients": clients,
        "requests_per_repetition": n,
    }
