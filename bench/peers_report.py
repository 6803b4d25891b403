"""bench/results/peers.md from the figures of bench/peers.py: the tables, the aims and
whether each is met, and how every figure was taken."""

from __future__ import annotations

import math
from typing import Any

ORDER = ("outlast", "outlast ×2", "aegra", "langgraph dev")
TITLES = {
    "outlast": "outlast (1 process)",
    "outlast ×2": "outlast ×2 (2 processes)",
    "aegra": "Aegra",
    "langgraph dev": "`langgraph dev`",
}
MODE_TEXT = {"wait": "`runs.wait`", "join": "thread + `runs.create` + `join`"}


def _num(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    if not a or not b or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(row) + " |" for row in rows]


def _cell(speed: dict[str, Any], peer: str, mode: str, level: int) -> dict[str, Any]:
    return speed["peers"].get(peer, {}).get("modes", {}).get(mode, {}).get(str(level), {})


def speed_rows(speed: dict[str, Any], peers: list[str]) -> list[list[str]]:
    rows = []
    for level in speed["levels"]:
        for mode in ("wait", "join"):
            row = [f"runs/s, {MODE_TEXT[mode]}, {level} in flight"]
            for p in peers:
                c = _cell(speed, p, mode, level)
                text = f"**{_num(c.get('runs_per_s'))}**" if c else "—"
                if c.get("failed"):
                    text += f" ({int(c['failed'])} failed)"
                row.append(text)
            rows.append(row)
    for level in speed["levels"]:
        row = [f"p50 / p99 create → terminal, `runs.wait`, {level} in flight"]
        for p in peers:
            c = _cell(speed, p, "wait", level)
            row.append(f"{_num(c.get('p50_ms'), 0)} / {_num(c.get('p99_ms'), 0)} ms")
        rows.append(row)
    for level in speed["levels"]:
        row = [f"CPU per run, `runs.wait`, {level} in flight: server + Postgres + Redis"]
        for p in peers:
            c = _cell(speed, p, "wait", level)
            parts = [c.get("cpu_server_ms", 0.0), c.get("cpu_postgres_ms", 0.0)]
            parts.append(c.get("cpu_redis_ms", 0.0))
            row.append(
                f"{_num(sum(parts))} ms ({' + '.join(_num(x) for x in parts)})" if c else "—"
            )
        rows.append(row)
    for level in speed["levels"]:
        row = [f"cores busy (the machine's 2: anything's), `runs.wait`, {level} in flight"]
        for p in peers:
            c = _cell(speed, p, "wait", level)
            row.append(
                f"{_num(c.get('machine_cores'), 2)} (client {_num(c.get('cpu_client_ms'))} ms/run)"
                if c
                else "—"
            )
        rows.append(row)
    row = ["first streamed event after create, p50 / p99"]
    for p in peers:
        f = speed["peers"].get(p, {}).get("first_event_ms", {})
        row.append(f"{_num(f.get('p50'), 0)} / {_num(f.get('p99'), 0)} ms")
    rows.append(row)
    return rows


def memory_rows(memory: dict[str, Any], peers: list[str]) -> list[list[str]]:
    row = ["RSS idle → with runs waiting at an interrupt (per run)"]
    for p in peers:
        m = memory.get(p)
        if not m:
            row.append("—")
            continue
        row.append(
            f"{_num(m['idle_mib'])} → {_num(m['parked_mib'])} MiB with {m['parked']:,} "
            f"({m['bytes_per_parked_run']:,} B/run)"
        )
    return [row]


def _stream(s: dict[str, Any]) -> str:
    if s.get("exact") and s.get("rejoined"):
        return "**rejoined, exact**"
    missing, repeated = s.get("missing", []), s.get("repeated", 0)
    return (
        f"{'rejoined' if s.get('rejoined') else 'no rejoin'} ({s.get('outcome')}); "
        f"{len(missing)} ticks missing, {repeated} repeated"
    )


def fault_rows(faults: dict[str, Any], peers: list[str]) -> list[list[str]]:
    rows = []
    for scenario, text in (("in_flight", "20 runs in flight"), ("waiting", "20 runs waiting")):
        for key, label in (
            ("lost", "runs lost (never completed)"),
            ("finished_twice", "runs finished twice"),
            ("effects_twice", "side effects performed twice"),
        ):
            if scenario == "waiting" and key == "effects_twice":
                continue
            row = [f"SIGKILL, {text}: {label}"]
            for p in peers:
                f = faults.get(p, {}).get(scenario)
                if f is None:
                    row.append("—")
                elif "error" in f:
                    row.append(f"not measured: `{f['error']}`")
                else:
                    row.append(f"**{f[key]}** of {f['runs']}")
            rows.append(row)
        if scenario == "in_flight":
            row = ["SIGKILL, 20 runs in flight: the streaming client"]
            for p in peers:
                f = faults.get(p, {}).get(scenario) or {}
                row.append(_stream(f["stream"]) if "stream" in f else "—")
            rows.append(row)
            row = ["SIGKILL, 20 runs in flight: statuses reported after the restart"]
            for p in peers:
                f = faults.get(p, {}).get(scenario) or {}
                row.append(", ".join(f"{k} {v}" for k, v in f.get("statuses", {}).items()) or "—")
            rows.append(row)
    return rows


def aims(res: dict[str, Any]) -> list[str]:
    speed = res.get("speed", {})
    out = []
    if "peers" in speed and "aegra" in speed["peers"] and "outlast" in speed["peers"]:
        ours, theirs = _cell(speed, "outlast", "wait", 50), _cell(speed, "aegra", "wait", 50)
        rate = _ratio(ours.get("runs_per_s"), theirs.get("runs_per_s"))
        p99 = _ratio(theirs.get("p99_ms"), ours.get("p99_ms"))
        cpu = [
            sum(c.get(f"cpu_{k}_ms", 0.0) for k in ("server", "postgres", "redis"))
            for c in (ours, theirs)
        ]
        cpu_ratio = _ratio(cpu[1], cpu[0])
        for text, value, aim in (
            ("completed runs/s at 50 in flight, outlast ÷ Aegra", rate, 2.0),
            ("p99 at 50 in flight, Aegra ÷ outlast", p99, 2.0),
            ("CPU per run at 50 in flight, Aegra ÷ outlast", cpu_ratio, 2.0),
        ):
            met = "—" if value is None else ("**yes**" if value >= aim else "no")
            out.append(f"| {text} | {_num(value, 2)}× | ≥ {aim:.0f}× | {met} |")
    if "peers" in speed and "outlast ×2" in speed["peers"]:
        best = None
        for level in speed["levels"]:
            two = _cell(speed, "outlast ×2", "wait", level)
            one = _cell(speed, "outlast", "wait", level)
            value = _ratio(two.get("runs_per_s"), one.get("runs_per_s"))
            if level >= 50 and value is not None:
                best = value if best is None else max(best, value)
                met = "**yes**" if value >= 1.6 else "no"
                out.append(
                    f"| 2 processes ÷ 1, runs/s at {level} in flight | {_num(value, 2)}× "
                    f"| ≥ 1.6× | {met} |"
                )
    faults = res.get("faults", {}).get("outlast ×2", {})
    for scenario in ("in_flight", "waiting"):
        f = faults.get(scenario)
        if f and "error" not in f:
            bad = f["lost"] + f["finished_twice"] + f["effects_twice"]
            stream = f.get("stream", {}).get("exact", True)
            met = "**yes**" if bad == 0 and stream else "no"
            out.append(
                f"| outlast after SIGKILL, {scenario.replace('_', ' ')}: lost + twice "
                f"| {bad} | 0 | {met} |"
            )
    if not out:
        return []
    return ["| aim | measured | aim | met |", "|---|---|---|---|", *out]


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    busy = res.get("busy", {})
    flag = (
        f"**the machine was busy**: other tenants used {busy['others_cores']} cores on average"
        if busy.get("busy")
        else f"other tenants used {busy.get('others_cores', '?')} cores on average (quiet)"
    )
    lines = [
        "# outlast beside Aegra and `langgraph dev`, through the same client",
        "",
        f"{res['taken']}; {m['platform']}, {m['cpus']} CPUs, Python {m['python']}, "
        f"langgraph {m['langgraph']}; Postgres and Redis on the same host; load average at "
        f"start {m['load_average_at_start']}, at the end {res.get('load_average_at_end')}; "
        f"{flag}. Total {res.get('total_s', '?')} s. Reproduce: "
        "`.venv/bin/python bench/peers.py"
        + (" --quick" if res["options"].get("quick") else "")
        + "`.",
        "",
    ]
    if res.get("unavailable"):
        lines += ["Not measured:", ""]
        lines += [f"- {TITLES.get(k, k)}: {v}" for k, v in res["unavailable"].items()]
        lines.append("")
    speed = res.get("speed", {})
    if "peers" in speed:
        peers = [p for p in ORDER if p in speed["peers"]]
        # results taken before --concurrency existed ran every server at the top level
        cap = res["options"].get("concurrency", max(speed.get("levels", [0])))
        lines += [
            f"## Speed and scale (10-node graph; median of {res['options']['repeat']} repetitions)",
            "",
            f"Every server executes at most {cap} runs at once per process (`--concurrency`; "
            "outlast's `--concurrency`, the dev server's and Aegra's `N_JOBS_PER_WORKER`); "
            "the load beyond that waits in the server's own queue.",
            "",
        ]
        lines += _table([""] + [TITLES[p] for p in peers], speed_rows(speed, peers))
        if res.get("memory"):
            lines += memory_rows_block(res["memory"], peers)
        lines.append("")
    elif "error" in speed:
        lines += [f"Speed not measured: `{speed['error']}`", ""]
    faults = res.get("faults", {})
    if faults and "error" not in faults:
        peers = [p for p in ORDER if p in faults]
        lines += ["## Faults: SIGKILL of every process of the server, then a restart", ""]
        lines += _table([""] + [TITLES[p] for p in peers], fault_rows(faults, peers))
        lines.append("")
    aim_lines = aims(res)
    if aim_lines:
        lines += ["## Aims", "", *aim_lines, ""]
    lines += ["## How each figure was taken", "", HOW]
    return "\n".join(lines) + "\n"


def memory_rows_block(memory: dict[str, Any], peers: list[str]) -> list[str]:
    return ["| " + " | ".join(row) + " |" for row in memory_rows(memory, peers)]


HOW = """\
- **Reading it.** Aegra (in its Redis mode, the one that recovers runs) learns that a run
  ended by polling Redis every 2 s in `runs.wait` and `join`, so its rates at 1 and 10 in
  flight measure that poll; its streams do not poll. After a SIGKILL it takes runs back
  when their 30 s lease runs out and runs the interrupted node again, side effect
  included. `langgraph dev` polls its in-memory queue every 0.5 s when idle (about 1 s per
  run) and has no database to pay for; a SIGKILL loses what was in flight. On this machine
  the server, Postgres and the client share 2 cores: the `cores busy` row says how much of
  the machine a figure took, which is what bounds a second process.
- **The same client, graphs and machine**: every figure comes through `langgraph_sdk` (its
  `LangGraphClient`, with a connection pool as large as the load), against servers of the
  same `bench/peers/langgraph.json`. outlast and Aegra each have their own fresh Postgres
  database on the same server; Aegra also uses Redis (its CPU is counted as Aegra's); the
  dev server keeps everything in memory.
- **Runs at once** (`--concurrency`, 10 by default: outlast's default, and the dev
  server's and Aegra's per worker process). A server is given the load of its clients
  (runs in flight) and decides how many runs it executes at once; the rest wait in its
  queue, durably for outlast and Aegra. On this graph, whose nodes do no I/O, one event
  loop does the most at about 10: at 50 runs at once each run costs more CPU (the loop,
  the pool and the caches shared by more runs). With every server's cap at the top level
  (`--concurrency 200`, how the table was taken before 2026-12-01 evening), outlast's rate
  fell from 10 to 50 in flight (17.3 to 14.1 runs/s, one repetition on a machine three
  times slower than the one of 2026-12-01 21:20), where at 10 it held (16.6, 17.0, 16.5 at
  10, 50, 200). A graph that waits on a model wants a higher cap. The faults section runs
  20 at once, its 20 runs.
- **`join` at 200 in flight** is the client's limit, not a server's: every server falls
  there, the in-memory dev server most, and the benchmark's client process (one event
  loop driving 200 long polls and three requests per run through one httpx pool) spends
  about 45 ms of CPU per run there against 6 to 12 ms at 10 and 50 (`cpu_client_ms` in
  `peers.json`).
- **Failed runs** (`(n failed)`): a call the client saw fail, by reason in `peers.json`.
  At 200 in flight with `join` they were httpx `ReadError`s on outlast and Aegra: both
  servers' uvicorn closed a connection idle for 5 s just as the client, whose pool keeps
  them 5 s too, sent a request on it. outlast now keeps idle connections 75 s
  (`OUTLAST_HTTP_KEEP_ALIVE`), so the client closes first; the 200-in-flight cells taken
  again with that (outlast and outlast ×2, 2 repetitions, 4 cells with `join`) had none.
- **Runs/s** (`peers_speed.py`): a closed loop of as many clients as runs in flight, each
  starting its next threadless run of the 10-node graph when its last one completed, until
  the level's runs were started or its time cap passed; completed runs over the time to the
  last completion. Every peer up at once, measured one after the other at each level and
  way, the order rotating with the repetition. The figure is the median over repetitions.
- **p50/p99** are the latencies of the runs of that loop, create to terminal.
- **CPU per run**: user + system time of every process of the server's tree (`/proc`),
  of the Postgres backends of its database, and of Redis, over the same loop.
- **First streamed event**: one run at a time, `runs.stream(..., stream_mode="updates")`:
  request to the first node's update.
- **Memory**: RSS of the server's process tree (median of 6 samples, 0.5 s apart) after the
  speed runs, then with the runs of `ask` parked at their `interrupt()`, each on its own
  thread, created 50 at a time.
- **Faults** (`peers_faults.py`): what was lost or done twice is read from the file the
  graphs append to (one line per side effect, one per completion), not from the server's
  account. outlast runs as `--workers 2` there, with a 5 s activity lease (a killed
  worker's runs are taken over when their lease runs out). Every process of the server gets
  SIGKILL; it starts again on the same port, database and Redis; the runs are watched for a
  bounded time. The streaming client rejoins with the SDK's `join_stream(last_event_id=…)`.
- **Busy**: the CPU that the machine spent on anything but the benchmark's own processes,
  Postgres and Redis, sampled every 2 s (`busy.py`); above 0.2 cores on average the run is
  marked busy.
"""
