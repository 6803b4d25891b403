"""LangGraph's thread protocol v2 on outlast against ``langgraph dev``, through the SDK's own
transports, on the same graph: how soon a run's first event comes, what a resume after a
cut gets, and how events reach many subscribers of one thread.

    .venv/bin/python bench/protocol_v2.py            # defaults (about 10 minutes on 2 cores)
    .venv/bin/python bench/protocol_v2.py --quick    # a smoke run

Both servers are up at once on the ``ticker`` graph (bench/graphs.py: one node emitting
custom events, each carrying its index and the wall-clock time it was emitted): ``outlast
serve`` on a fresh Postgres database, and ``langgraph dev`` (LangGraph's in-memory dev
server, langgraph-api's own implementation of the protocol). Every figure is taken on
both, in alternation (the order flips every repetition), with the same client code:
``langgraph_sdk``'s ``ProtocolSseTransport`` and ``ProtocolWebSocketTransport``, what
``client.threads.stream(..., transport="sse" | "websocket")`` runs on (protocol_kit.py says
why not the thread stream object itself). Commands are ``POST /threads/{t}/commands``;
events come from ``POST /threads/{t}/stream/events`` (SSE) or a WebSocket on that path.

1. First event after ``run.start`` (the aim: p50 on outlast within 1.2× the dev server's).
   A fresh thread, a subscription to every channel, then ``run.start`` after a random
   pause of 0.2–0.7 s: at least the time a subscription takes to be in place, and a random
   phase against the poll the dev server's queue runs every 0.5 s when idle (outlast's
   idle thread stream is woken by the run's acceptance), so the median is what a client
   sending its command at any moment sees, not a lucky or unlucky phase. Timed from
   just before the POST to the run's first frame of type ``event`` reaching this process;
   beside it the command's answer and the first custom event (the node's first output).
   The p50 is over the samples of a repetition; figures are medians over repetitions, the
   ratio the median of per-repetition ratios.
2. A resume after a cut. Subscribe, start a run of ``--protocol-cut-events`` events,
   drop the connection after ``--protocol-cut-after`` custom events (the transport's close:
   the socket goes, no goodbye), stay away three events' time, resubscribe with ``since``
   = the last ``seq`` seen (what the SDK sends by itself). Counted against a full read of
   the thread at the end (``since=0``): events sent again (``seq`` ≤ the cursor, or an
   ``event_id`` already received) and events missing (in the full read, never received).
   On outlast also after a SIGKILL of the whole server (a second ``outlast serve`` on its
   own database, lease TTL 3 s, restarted on the same port; the client retries until it
   answers and the run is taken over by the restarted worker). The dev server cannot: its
   runs and buffers live in its process ("not possible: in-memory").
3. Many subscribers on one thread (``--protocol-subscribers``, SSE and WebSocket apart):
   all subscribed first, then a short run whose end must reach every one of them (proof
   that each is live), then the measured run emits ``--protocol-fanout-events`` events
   ``--protocol-fanout-interval`` s apart. Per delivery: receipt minus the time the node
   emitted it (the graph embeds ``time.time()``; one host, one clock), p50 and p99 over
   every delivery of a repetition; and the spread, receipt minus the first subscriber's
   receipt of the same event. A level that fails (a timeout, a refused connection) is
   taken again at half the subscribers, down to 10: the table says at which level each
   figure was taken. The receiving client is one asyncio process on the same 2 cores: its
   own queueing is in both servers' figures alike.

The whole run is watched for other tenants' CPU (busy.py): a run where they took more
than a fifth of a core on average is marked busy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import benchkit
import busy
import httpx
from benchkit import DevServer, Outlast, free_port, kill_tree, med, pct, r, temp_database
from langgraph_sdk import get_client
from protocol_kit import (
    CHANNELS,
    TRANSPORTS,
    Reader,
    compare,
    cut_resume,
    fanout,
    first_event,
    full_read,
    is_end,
    is_event,
    nth_custom,
    reconnect,
    start_command,
    transport,
)
from protocol_report import markdown, summarize

SYSTEMS = ("outlast", "dev")
Systems = dict[str, tuple[httpx.AsyncClient, Any]]  # each system's HTTP client and SDK
SIZES: list[benchkit.Size] = [
    ("protocol_first_samples", 12, 5, "protocol: first-event samples per system, transport, rep"),
    ("protocol_cut_events", 40, 40, "protocol: events of a run cut mid-way"),
    ("protocol_cut_after", 10, 10, "protocol: custom events received before the cut"),
    ("protocol_interval", 0.05, 0.05, "protocol: seconds between events of a cut run"),
    ("protocol_subscribers", 1000, 50, "protocol: subscribers of one thread"),
    ("protocol_fanout_events", 20, 10, "protocol: events of the fan-out run"),
    ("protocol_fanout_interval", 0.25, 0.25, "protocol: seconds between fan-out events"),
]
MIN_SUBSCRIBERS = 10
# the killed server's lease runs out soon, so the restarted one takes its run over quickly
KILL_ENV = {
    "OUTLAST_WORKER_LEASE_TTL": "3",
    "OUTLAST_WORKER_HEARTBEAT": "1",
    "OUTLAST_REAPER_INTERVAL": "0.5",
}


def http_client(base: str) -> httpx.AsyncClient:
    """One client for commands and every subscription (a stream never times out reading:
    the servers' heartbeats keep it open)."""
    timeout = httpx.Timeout(30.0, read=None)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
    return httpx.AsyncClient(base_url=base, timeout=timeout, limits=limits)


@asynccontextmanager
async def clients(base: str) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    async with http_client(base) as http, get_client(url=base, api_key=None) as sdk:
        yield http, sdk


async def first_events(opts: Any, systems: Systems, rep: int) -> dict[str, Any]:
    """Samples one by one, alternating between the systems (order flipped per sample)."""
    out: dict[str, Any] = defaultdict(list)
    for kind in TRANSPORTS:
        for k in range(opts.protocol_first_samples):
            names = SYSTEMS if (rep + k) % 2 == 0 else SYSTEMS[::-1]
            for name in names:
                out[f"{name}/{kind}"].append(await first_event(*systems[name], kind))
    return dict(out)


async def cuts(opts: Any, systems: Systems, rep: int) -> dict[str, Any]:
    out = {}
    for kind in TRANSPORTS:
        for name in SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]:
            out[f"{name}/{kind}"] = await cut_resume(
                *systems[name],
                kind,
                opts.protocol_cut_events,
                opts.protocol_interval,
                opts.protocol_cut_after,
            )
    return out


async def fanouts(opts: Any, systems: Systems, rep: int, levels: dict[str, int]) -> dict[str, Any]:
    """At the level that last worked for each system and transport, halving on failure."""
    out: dict[str, Any] = {}
    for kind in TRANSPORTS:
        for name in SYSTEMS if rep % 2 == 0 else SYSTEMS[::-1]:
            key, failures = f"{name}/{kind}", []
            n = levels.get(key, opts.protocol_subscribers)
            while n >= MIN_SUBSCRIBERS:
                try:
                    got = await fanout(
                        *systems[name],
                        kind,
                        n,
                        opts.protocol_fanout_events,
                        opts.protocol_fanout_interval,
                    )
                    break
                except Exception as exc:
                    failures.append({"subscribers": n, "error": describe(exc)})
                    print(f"  fan-out {key} failed at {n}: {failures[-1]['error']}", flush=True)
                    n //= 2
                    await asyncio.sleep(5)  # the server lets go of the failed crowd
            else:
                out[key] = {"subscribers": 0, "failures": failures}
                continue
            levels[key] = n
            out[key] = got | {"subscribers": n, "failures": failures}
            print(
                f"  fan-out {key} x{n}: emit→receipt p50 {med(got['emit_ms']):.1f} ms, p99 "
                f"{pct(got['emit_ms'], 99):.1f} ms; spread p99 {pct(got['spread_ms'], 99):.1f} "
                f"ms; subscribers short {got['subscribers_short']}",
                flush=True,
            )
    return out


def describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]


async def kill_resume(admin_url: str, opts: Any, kind: str) -> dict[str, Any]:
    """Subscribe, start, SIGKILL the whole server after a few events, restart it on the
    same port and database, reconnect with the cursor; counted as the cut is."""
    async with temp_database(admin_url) as db:
        port = free_port()
        server, restarted = Outlast(db, port=port, env=KILL_ENV), None
        try:
            await server.ready()
            async with clients(server.base) as (http, sdk):
                thread = (await sdk.threads.create())["thread_id"]
                tr = transport(http, kind, thread)
                first = Reader(tr, kind, {"channels": CHANNELS})
                await first.live()
                count = 2 * opts.protocol_cut_events
                await tr.send_command(start_command(count, opts.protocol_interval, "kill"))
                await first.until(nth_custom(opts.protocol_cut_after), 60)
                killed = time.time()
                kill_tree(server.proc)
                await first.close()
                before, cursor = first.events(), first.cursor()
                assert cursor is not None
                restarted = Outlast(db, port=port, env=KILL_ENV)
                second = await reconnect(tr, kind, cursor, 60)
                back, _ = await second.until(is_event, 60)
                ended, _ = await second.until(is_end, 90)
                await second.close()
                whole = await full_read(tr, kind)
                await tr.close()
        finally:
            server.stop()
            if restarted is not None:
                restarted.stop()
    attempts = [
        f["params"]["data"].get("attempt")
        for f in whole
        if f["method"] == "lifecycle" and f["params"]["data"].get("event") == "running"
    ]
    return compare(before, second.events(), cursor, whole) | {
        "kill_to_first_event_s": back - killed,
        "kill_to_end_s": ended - killed,
        "attempts": attempts,
    }


async def measure(opts: Any, admin_url: str) -> dict[str, Any]:
    """Every figure of both systems, side by side, then the SIGKILLs on outlast alone."""
    watch = busy.Watch().start()
    reps: list[dict[str, Any]] = []
    levels: dict[str, int] = {}
    async with temp_database(admin_url) as db:
        server = Outlast(db, concurrency=10)
        dev = DevServer(["ticker"], jobs=10)
        try:
            await asyncio.gather(server.ready(), dev.ready())
            async with AsyncExitStack() as stack:
                systems: Systems = {
                    "outlast": await stack.enter_async_context(clients(server.base)),
                    "dev": await stack.enter_async_context(clients(dev.base)),
                }
                for name in SYSTEMS:  # warm-up: imports, pools, the graph's first run
                    for kind in TRANSPORTS:
                        await first_event(*systems[name], kind)
                for rep in range(opts.repeat):
                    x = {"first": await first_events(opts, systems, rep)}
                    print_first(rep, opts, x["first"])
                    x["cut"] = await cuts(opts, systems, rep)
                    print(f"  cut {rep + 1}/{opts.repeat}: {x['cut']}", flush=True)
                    x["fanout"] = await fanouts(opts, systems, rep, levels)
                    reps.append(x)
        finally:
            server.stop()
            dev.stop()
    kills: dict[str, list[dict[str, Any]]] = {kind: [] for kind in TRANSPORTS}
    for _ in range(opts.repeat):
        for kind in TRANSPORTS:
            kills[kind].append(await kill_resume(admin_url, opts, kind))
            print(f"  SIGKILL {kind}: {kills[kind][-1]}", flush=True)
    res = summarize(reps, kills, opts)
    res["busy"] = await watch.stop()
    return res


def print_first(rep: int, opts: Any, first: dict[str, Any]) -> None:
    cells = [
        f"{key} {med([s['first_ms'] for s in samples]):.0f} ms"
        for key, samples in sorted(first.items())
    ]
    print(f"  first event {rep + 1}/{opts.repeat}: " + ", ".join(cells), flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--database-url", default=benchkit.ADMIN_URL, help="admin connection")
    p.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    p.add_argument("--render", action="store_true", help="rewrite protocol.md from the json")
    sizes = [("repeat", 3, 1, "repetitions; figures are their medians"), *SIZES]
    benchkit.add_sizes(p, sizes)
    args = p.parse_args(argv)
    benchkit.apply_sizes(args, sizes)
    return args


def write(res: dict[str, Any]) -> str:
    benchkit.RESULTS.mkdir(parents=True, exist_ok=True)
    (benchkit.RESULTS / "protocol.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    table = markdown(res)
    (benchkit.RESULTS / "protocol.md").write_text(table)
    return table


async def measure_and_write(opts: Any, admin_url: str) -> dict[str, Any]:
    """The suite's entry: the figures, also written to protocol.json and protocol.md."""
    started, at_start = time.monotonic(), benchkit.machine()
    res = await measure(opts, admin_url)
    res |= {
        "config": {k: v for k, v in vars(opts).items() if k != "database_url"},
        "machine": at_start,
        "date": benchkit.now_iso(),
        "load_average_at_end": [r(x) for x in os.getloadavg()],
        "total_seconds": r(time.monotonic() - started, 1),
    }
    write(res)
    return res


async def main() -> None:
    args = parse_args()
    if args.render:
        print(write(json.loads((benchkit.RESULTS / "protocol.json").read_text())))
        return
    res = await measure_and_write(args, args.database_url)
    print("\n" + markdown(res))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit("interrupted")
