"""bench/results/agents.md from the figures of bench/agents.py: a table per level of runs
in flight, the servers side by side with the ratios outlast ÷ dev and outlast ÷ Aegra, and
how every figure was taken."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from peers_report import TITLES, _num, _ratio, _table

ORDER = ("outlast", "aegra", "langgraph dev")
Cell = dict[str, Any]


def _cpu(c: Cell) -> float:
    return float(sum(c.get(f"cpu_{k}_ms", math.nan) for k in ("server", "postgres", "redis")))


def _failures(c: Cell) -> str:
    parts = [
        f"{int(c.get(key, 0))} {text}"
        for key, text in (
            ("refused", "refused"),
            ("cut_at_bound", "cut at the bound"),
            ("run_failed", "failed"),
            ("connection", "connection errors"),
        )
        if c.get(key)
    ]
    return ", ".join(parts) or "none"


def _left(c: Cell) -> str:
    """What the server still held of the runs cut at the bound, every repetition's."""
    texts = []
    for rep in c.get("each", []):
        left = rep.get("left", {})
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(left.get("statuses", {}).items()))
        if statuses:
            still = left.get("still_active_after_60s")
            texts.append(statuses + (f" ({still} still active 60 s after cancel)" if still else ""))
        if left.get("quiet_after_s", 0) > 5:
            texts.append(f"busy {left['quiet_after_s']:.0f} s after the level")
    return "; ".join(texts) or "—"


def _rss(c: Cell) -> str:
    return (
        f"{_num(c.get('rss_peak_per_run_kib'), 0)} / {_num(c.get('rss_steady_per_run_kib'), 0)}"
        f" KiB ({_num(c.get('idle_mib'), 0)} → {_num(c.get('peak_mib'), 0)} MiB)"
    )


# (label, text of a cell, the number whose ratio is shown, or None for no ratio)
Row = tuple[str, Callable[[Cell], str], Callable[[Cell], float | None] | None]
ROWS: list[Row] = [
    (
        "completed runs/s",
        lambda c: f"**{_num(c.get('runs_per_s'), 2)}**",
        lambda c: c.get("runs_per_s"),
    ),
    ("runs completed", lambda c: f"{int(c.get('completed', 0)):,}", None),
    ("runs not completed (by what the client saw)", _failures, None),
    ("what the server held of the cut runs, then", _left, None),
    (
        "run p50 / p99, thread create → stream end",
        lambda c: f"{_num(c.get('run_p50_s'))} / {_num(c.get('run_p99_s'))} s",
        lambda c: c.get("run_p99_s"),
    ),
    (
        "token delay p50 / p99, model emit → client receipt",
        lambda c: f"{_num(c.get('token_p50_ms'), 0)} / **{_num(c.get('token_p99_ms'), 0)}** ms",
        lambda c: c.get("token_p99_ms"),
    ),
    (
        "tokens delivered/s",
        lambda c: _num(c.get("tokens_per_s"), 0),
        lambda c: c.get("tokens_per_s"),
    ),
    (
        "server event-loop lag p50 / p99 (max)",
        lambda c: (
            f"{_num(c.get('lag_p50_ms'))} / **{_num(c.get('lag_p99_ms'))}** "
            f"({_num(c.get('lag_max_ms'), 0)}) ms"
        ),
        lambda c: c.get("lag_p99_ms"),
    ),
    (
        "the client's own event-loop lag p99",
        lambda c: f"{_num(c['client_lag_p99_ms'])} ms" if "client_lag_p99_ms" in c else "—",
        None,
    ),
    (
        "CPU per run: server + Postgres + Redis",
        lambda c: (
            f"**{_num(_cpu(c))}** ms ({_num(c.get('cpu_server_ms'))} + "
            f"{_num(c.get('cpu_postgres_ms'))} + {_num(c.get('cpu_redis_ms'))})"
        ),
        _cpu,
    ),
    (
        "RSS per run in flight, peak / steady (idle → peak)",
        _rss,
        lambda c: c.get("rss_peak_per_run_kib"),
    ),
    (
        "cores busy: the server's; the machine's 2 (anything's); client CPU per run",
        lambda c: (
            f"{_num(c.get('server_cores'), 2)}; {_num(c.get('machine_cores'), 2)}; "
            f"{_num(c.get('cpu_client_ms'))} ms"
        ),
        None,
    ),
]


def level_table(peers: dict[str, Any], names: list[str], level: str) -> list[str]:
    head = ["", *(TITLES.get(n, n) for n in names)]
    pairs = [(o, "outlast ÷ " + TITLES.get(o, o)) for o in ("langgraph dev", "aegra") if o in names]
    if "outlast" in names:
        head += [text for _, text in pairs]
    rows = []
    for label, text, number in ROWS:
        cells = [peers[n].get(level) for n in names]
        row = [label] + [text(c) if c else "—" for c in cells]
        if "outlast" in names:
            ours = peers["outlast"].get(level)
            for other, _ in pairs:
                theirs = peers[other].get(level)
                value = _ratio(number(ours), number(theirs)) if number and ours and theirs else None
                row.append(f"{_num(value, 2)}×" if value is not None else "")
        rows.append(row)
    return _table(head, rows)


def header(res: dict[str, Any]) -> list[str]:
    m, busy, opts = res["machine"], res.get("busy", {}), res["options"]
    levels = opts["inflight"]
    flag = (
        f"**the machine was busy**: other tenants used {busy['others_cores']} cores on average"
        if busy.get("busy")
        else f"other tenants used {busy.get('others_cores', '?')} cores on average (quiet)"
    )
    return [
        "# Agents in flight: outlast beside Aegra and `langgraph dev`",
        "",
        f"{res['taken']}; {m['platform']}, {m['cpus']} CPUs, Python {m['python']}, "
        f"langgraph {m['langgraph']}; Postgres and Redis on the same host; load average at "
        f"start {m['load_average_at_start']}, at the end {res.get('load_average_at_end')}; "
        f"{flag}. Total {res.get('total_s', '?')} s. Each level: runs started for "
        f"{opts['duration']:.0f} s, then {opts['drain']:.0f} s to finish; every server "
        f"executes up to {opts['concurrency']} runs at once. Reproduce: "
        "`.venv/bin/python bench/agents.py"
        + (" --quick" if opts.get("quick") else " --inflight " + ",".join(map(str, levels)))
        + "`.",
        "",
    ]


def sessions(res: dict[str, Any]) -> list[str]:
    """With ``--add``: which levels each session took, and how loaded the machine was."""
    out = []
    for s in res.get("earlier", []):
        busy = s.get("busy") or {}
        out.append(
            f"- {', '.join(map(str, s['inflight']))} in flight: taken {s['taken']}, up to "
            f"{s['concurrency']} runs at once, {s['duration']:.0f} s + {s['drain']:.0f} s; "
            f"load average {s['load_average_at_start']} → {s.get('load_average_at_end')}; "
            f"other tenants {busy.get('others_cores', '?')} cores"
            + (" (**busy**)" if busy.get("busy") else "")
        )
    if out:
        now = res["options"].get("taken_now", res["options"]["inflight"])
        out = [
            f"The header is the session that took {', '.join(map(str, now))} in flight; "
            "earlier sessions kept with `--add`:",
            "",
            *out,
            "",
        ]
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = header(res) + sessions(res)
    if res.get("unavailable"):
        lines += ["Not measured:", ""]
        lines += [f"- {TITLES.get(k, k)}: {v}" for k, v in res["unavailable"].items()]
        lines.append("")
    peers = res.get("peers", {})
    names = [n for n in ORDER if n in peers]
    for level in map(str, res["options"]["inflight"]):
        if not any(level in peers[n] for n in names):
            continue
        reps = max(len(peers[n].get(level, {}).get("each", [])) for n in names)
        plural = "s" * (reps > 1)
        lines += [f"## {int(level):,} runs in flight (median of {reps} repetition{plural})", ""]
        if "outlast" in names and len(names) > 1:
            lines += [RATIOS, ""]
        lines += level_table(peers, names, level)
        lines.append("")
    lines += ["## How each figure was taken", "", HOW]
    return "\n".join(lines) + "\n"


RATIOS = (
    "A ratio is outlast's figure ÷ the other's: above 1× is better for outlast in runs/s "
    "and tokens/s, below 1× in every other row."
)

HOW = """\
- **The load** (`bench/agents.py`, the graph in `bench/peers/agent.py`): every run is a
  tool-calling agent, a LangGraph `StateGraph` of messages with the prebuilt `ToolNode`
  and `tools_condition`: four calls of a fake chat model (a LangChain `BaseChatModel`
  whose `_astream` waits 0.5 to 2 s per call and streams 100 tokens evenly over it; the
  first three end with a tool call), three tool calls (0.1 to 0.5 s of `asyncio.sleep`).
  Latencies come from a generator seeded with the run's task and turn, so every server
  gets the same runs. A run takes about 6 s when nothing waits.
- **The same client and servers as `bench/peers.py`**: `langgraph_sdk` only, one
  `LangGraphClient` per server with a connection pool larger than the level. outlast is
  one process on a fresh Postgres database; Aegra runs in its Redis mode on its own fresh
  database; `langgraph dev` keeps everything in memory. All three are up at once and take
  turns, the order rotating with the level and the repetition.
- **N in flight**: a closed loop of N clients; each creates a thread, streams a run on it
  with `runs.stream(..., stream_mode="messages-tuple")` to the end, then starts the next,
  for the level's duration. The runs then in flight get the drain time; a run not ended
  by then is cut (`cut at the bound`). **Completed runs/s**: runs whose stream ended
  with all 400 tokens and no error, over the time from the start to the last completion.
- **Not completed**: `refused` is an HTTP error status from the server, `failed` a stream
  that carried an `error` event or not exactly the 400 tokens, `connection errors` a
  broken connection. For the runs cut at the bound, the server is then asked for the
  thread's runs (their statuses are reported: `pending` is still queued, `running` still
  executing), and those still active are cancelled before the next server's turn.
- **Token delay**: the model writes `time.time()` into the text of each token it emits
  (`" @<emit>~<lag>"`: outlast's `messages-tuple` events carry the content of the chunks,
  each one live from the process that runs the model, or coalesced per
  `OUTLAST_MESSAGE_FLUSH_INTERVAL` when replayed from the log, and not their metadata,
  so the text is what survives every server); the client, on the same machine
  and clock, takes receipt − emit for every token it gets. p50/p99 over every token of
  the level.
- **Event-loop lag**: the overshoot of the model's `asyncio.sleep` before each token,
  inside the server process, on the loop that runs the graph; carried in the token too.
  The client's own lag (the overshoot of a 50 ms sleep, all through the level) says how
  much of the token delay is the client's: a token waits that long to be read at most.
- **CPU per run**: user + system time of the server's process tree, of the Postgres
  backends of its database, and of Redis (Aegra only), over the level, ÷ the runs
  completed. `client` is the bench's own process (parsing every token's event), which
  shares the 2 cores; `cores busy` is the whole machine's busy time over the level.
- **RSS per run in flight**: the server tree's RSS sampled every 0.5 s during the level;
  peak − idle, and steady (the median over the second half of the level) − idle, ÷ N.
  Idle is the median of 6 samples just before the level.
- **Machine**: 2 cores shared with other work: the load averages and the other tenants'
  CPU (`busy.py`) are in the header; the figures are medians over the repetitions.
"""
