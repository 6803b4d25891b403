"""The figures of bench/protocol_v2.py from its repetitions, and its markdown report."""

from __future__ import annotations

from collections import Counter
from typing import Any

from benchkit import med, pct, r
from protocol_kit import TRANSPORTS

SYSTEMS = ("outlast", "dev")
FIRST_AIM = 1.2
COUNTS = ("before_cut", "after_cut", "full_read", "resent", "missing", "unknown")


def summarize(
    reps: list[dict[str, Any]], kills: dict[str, list[dict[str, Any]]], opts: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"first": {}, "cut": {}, "kill": {}, "fanout": {}, "ratios": {}}
    for kind in TRANSPORTS:
        for name in SYSTEMS:
            key = f"{name}/{kind}"
            out["first"][key] = first_figures([x["first"][key] for x in reps])
            out["cut"][key] = counted([x["cut"][key] for x in reps])
            out["fanout"][key] = fanout_figures([x["fanout"][key] for x in reps])
        o, d = (out["first"][f"{s}/{kind}"]["all_first_p50_ms"] for s in SYSTEMS)
        first_ratio = r(med([a / b for a, b in zip(o, d, strict=True)]), 3)
        out["ratios"][f"first_{kind}"] = first_ratio
        fo, fd = (out["fanout"][f"{s}/{kind}"] for s in SYSTEMS)
        if fo.get("subscribers") and fo["subscribers"] == fd.get("subscribers"):
            out["ratios"][f"fanout_p99_{kind}"] = r(fo["emit_p99_ms"] / fd["emit_p99_ms"], 3)
            steady = fo["steady_p99_ms"] / fd["steady_p99_ms"]
            out["ratios"][f"fanout_steady_p99_{kind}"] = r(steady, 3)
        out["kill"][kind] = counted(kills[kind]) | {
            "kill_to_first_event_s": r(med([k["kill_to_first_event_s"] for k in kills[kind]])),
            "kill_to_end_s": r(med([k["kill_to_end_s"] for k in kills[kind]])),
            "attempts": [k["attempts"] for k in kills[kind]],
        }
    out["met"] = {
        "first": all(out["ratios"][f"first_{k}"] <= FIRST_AIM for k in TRANSPORTS),
        "cut": all(c["exact"] == c["cuts"] for c in out["cut"].values()),
        "kill": all(c["exact"] == c["cuts"] for c in out["kill"].values()),
    }
    out["repetitions"] = [compact(x) for x in reps]
    out["kills"] = kills
    return out


def first_figures(per_rep: list[list[dict[str, Any]]]) -> dict[str, Any]:
    def p50s(field: str) -> list[float]:
        return [med([s[field] for s in samples]) for samples in per_rep]

    every = [s["first_ms"] for samples in per_rep for s in samples]
    return {
        "first_p50_ms": r(med(p50s("first_ms")), 1),
        "first_p90_ms": r(pct(every, 90), 1),
        "first_custom_p50_ms": r(med(p50s("first_custom_ms")), 1),
        "answer_p50_ms": r(med(p50s("answer_ms")), 1),
        "all_first_p50_ms": [r(x, 1) for x in p50s("first_ms")],
        "first_methods": dict(Counter(s["first_method"] for x in per_rep for s in x)),
        "samples": len(every),
    }


def counted(cuts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: sum(c[k] for c in cuts) for k in COUNTS}
    return out | {"cuts": len(cuts), "exact": sum(bool(c["exact"]) for c in cuts)}


def compact(rep: dict[str, Any]) -> dict[str, Any]:
    """A repetition as kept in the results file: each fan-out's per-delivery latencies
    (20,000 numbers per system and transport at 1,000 subscribers) as their percentiles."""
    fanout = {
        key: {
            k: (_percentiles(v) if k.endswith("_ms") and isinstance(v, list) else v)
            for k, v in one.items()
        }
        for key, one in rep.get("fanout", {}).items()
    }
    return {**rep, "fanout": fanout}


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    points = {f"p{p}": r(pct(values, p), 1) for p in (50, 90, 99)}
    return {"n": len(values), **points, "max": r(max(values), 1)}


def fanout_figures(per_rep: list[dict[str, Any]]) -> dict[str, Any]:
    ran = [x for x in per_rep if x.get("subscribers")]
    failures = [f for x in per_rep for f in x.get("failures", [])]
    if not ran:
        return {"subscribers": 0, "failures": failures}
    return {
        "subscribers": min(x["subscribers"] for x in ran),
        "emit_p50_ms": r(med([med(x["emit_ms"]) for x in ran]), 1),
        "emit_p99_ms": r(med([pct(x["emit_ms"], 99) for x in ran]), 1),
        "emit_max_ms": r(max(max(x["emit_ms"]) for x in ran), 1),
        "spread_p99_ms": r(med([pct(x["spread_ms"], 99) for x in ran]), 1),
        "steady_p50_ms": r(med([med(x["steady_ms"]) for x in ran]), 1),
        "steady_p99_ms": r(med([pct(x["steady_ms"], 99) for x in ran]), 1),
        "all_emit_p99_ms": [r(pct(x["emit_ms"], 99), 1) for x in ran],
        "deliveries": sum(len(x["emit_ms"]) for x in ran),
        "subscribers_short": sum(x["subscribers_short"] for x in ran),
        "failures": failures,
    }


def _yes(ok: bool) -> str:
    return "**yes**" if ok else "no"


def first_rows(res: dict[str, Any]) -> list[str]:
    rows = []
    for kind in TRANSPORTS:
        o, d = (res["first"][f"{s}/{kind}"] for s in SYSTEMS)
        ratio = res["ratios"][f"first_{kind}"]
        rows.append(
            f"| first event after `run.start`, p50 | {kind} | {o['first_p50_ms']:.0f} ms "
            f"(first custom {o['first_custom_p50_ms']:.0f}, answer {o['answer_p50_ms']:.0f}) | "
            f"{d['first_p50_ms']:.0f} ms (first custom {d['first_custom_p50_ms']:.0f}, answer "
            f"{d['answer_p50_ms']:.0f}) | **{ratio:.2f}×** | ≤ {FIRST_AIM}× | "
            f"{_yes(ratio <= FIRST_AIM)} |"
        )
    return rows


def cut_cell(c: dict[str, Any]) -> str:
    return (
        f"{c['resent']} re-sent / {c['missing']} missing ({c['exact']}/{c['cuts']} exact; "
        f"{c['full_read']} events in the full reads)"
    )


def resume_rows(res: dict[str, Any]) -> list[str]:
    rows = []
    for kind in TRANSPORTS:
        o, d = (res["cut"][f"{s}/{kind}"] for s in SYSTEMS)
        ok = o["exact"] == o["cuts"]
        rows.append(
            f"| resume after a dropped connection | {kind} | {cut_cell(o)} | {cut_cell(d)} | "
            f"| 0 re-sent, 0 missing | {_yes(ok)} |"
        )
    for kind in TRANSPORTS:
        k = res["kill"][kind]
        rows.append(
            f"| resume after SIGKILL + restart of the server | {kind} | {cut_cell(k)}; first "
            f"event {k['kill_to_first_event_s']:.1f} s after the kill, run ended after "
            f"{k['kill_to_end_s']:.1f} s; attempts {k['attempts']} | not possible: in-memory "
            f"| | 0 re-sent, 0 missing | {_yes(k['exact'] == k['cuts'])} |"
        )
    return rows


def fan_cell(f: dict[str, Any]) -> str:
    if not f.get("subscribers"):
        return "did not run: " + "; ".join(x["error"] for x in f["failures"])[:200]
    short = f", {f['subscribers_short']} subscribers short" if f["subscribers_short"] else ""
    return (
        f"×{f['subscribers']}: p50 {f['emit_p50_ms']:.0f} ms, **p99 {f['emit_p99_ms']:.0f} "
        f"ms** (spread p99 {f['spread_p99_ms']:.0f} ms; from 0.6 s into the run: p50 "
        f"{f['steady_p50_ms']:.0f}, p99 {f['steady_p99_ms']:.0f} ms){short}"
    )


def fanout_rows(res: dict[str, Any]) -> list[str]:
    rows = []
    for kind in TRANSPORTS:
        o, d = (res["fanout"][f"{s}/{kind}"] for s in SYSTEMS)
        ratio = res["ratios"].get(f"fanout_p99_{kind}")
        steady = res["ratios"].get(f"fanout_steady_p99_{kind}")
        cell = f"**{ratio:.2f}×** (from 0.6 s: {steady:.2f}×)" if ratio and steady else "—"
        rows.append(
            f"| subscribers of one thread, emit → receipt | {kind} | {fan_cell(o)} | "
            f"{fan_cell(d)} | {cell} | p99, {res['config']['protocol_subscribers']:,} "
            f"subscribers | — |"
        )
    return rows


def markdown(res: dict[str, Any]) -> str:
    m, c, b = res["machine"], res["config"], res.get("busy", {})
    busy = (
        f"**busy**: other tenants used {b['others_cores']} cores on average"
        if b.get("busy")
        else f"quiet: other tenants used {b.get('others_cores')} cores on average"
    )
    lines = [
        "# LangGraph's thread protocol v2: outlast against `langgraph dev`",
        "",
        f"`ticker` graph; {res['date']}; {m['platform']}, {m['cpus']} CPUs, load average at "
        f"start {m['load_average_at_start']}, at the end {res['load_average_at_end']} "
        f"({busy}); Python {m['python']}, langgraph {m['langgraph']}, langgraph-api "
        f"{m['langgraph_api']}; Postgres on the same host. {'`--quick`, ' if c['quick'] else ''}"
        f"median of {c['repeat']} repetition(s); total {res['total_seconds']:.0f} s.",
        "",
        "| figure | transport | outlast | `langgraph dev` | outlast / dev | aim | met |",
        "|---|---|---|---|---|---|---|",
        *first_rows(res),
        *resume_rows(res),
        *fanout_rows(res),
        "",
        notes(c),
        "",
        "Every sample, cut and delivery count is in `protocol.json`; how each figure is "
        "taken, and why, in the docstring of `bench/protocol_v2.py`.",
    ]
    return "\n".join(lines) + "\n"


def notes(c: dict[str, Any]) -> str:
    return (
        f"Both servers up at once (outlast `serve` on Postgres, `langgraph dev` in memory), "
        f"alternated; clients: `langgraph_sdk`'s protocol transports. First event: "
        f"{c['protocol_first_samples']} samples per system, transport and repetition, each "
        f"a fresh thread subscribed to every channel, `run.start` after a random 0.2–0.7 s. "
        f"Cut: a run of {c['protocol_cut_events']} events {1000 * c['protocol_interval']:g} ms "
        f"apart, the connection dropped after {c['protocol_cut_after']}, resubscribed with "
        f"`since` = the last `seq`, counted against a full read (`since=0`); SIGKILL: the "
        f"same with {2 * c['protocol_cut_events']} events on a server of its own "
        f"(lease TTL 3 s), restarted on the same port. Fan-out: "
        f"{c['protocol_fanout_events']} events {1000 * c['protocol_fanout_interval']:g} ms "
        f"apart to every subscriber (channels `custom` and `lifecycle`); latency from the "
        f"node's own `time.time()`, spread from the first subscriber's receipt; ratio of "
        f"p99s when both ran at the same level."
    )


def suite_rows(p: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """The suite's table rows: (measurement, outlast, compared with, aim, met)."""
    out = []
    for kind in TRANSPORTS:
        o, d = (p["first"][f"{s}/{kind}"] for s in SYSTEMS)
        ratio = p["ratios"][f"first_{kind}"]
        out.append(
            (
                f"protocol v2, first event after `run.start` ({kind}), p50",
                f"{o['first_p50_ms']:.0f} ms = **{ratio:.2f}×**",
                f"`langgraph dev`: {d['first_p50_ms']:.0f} ms; first custom event: outlast "
                f"{o['first_custom_p50_ms']:.0f} ms, dev {d['first_custom_p50_ms']:.0f} ms",
                f"≤ {FIRST_AIM}× the dev server",
                _yes(ratio <= FIRST_AIM),
            )
        )
    for kind in TRANSPORTS:
        o, d, k = p["cut"][f"outlast/{kind}"], p["cut"][f"dev/{kind}"], p["kill"][kind]
        out.append(
            (
                f"protocol v2, resume with `since` ({kind})",
                f"cut: {o['resent']} re-sent / {o['missing']} missing; SIGKILL + restart: "
                f"{k['resent']} / {k['missing']}",
                f"`langgraph dev` cut: {d['resent']} re-sent / {d['missing']} missing; "
                "SIGKILL: not possible (in-memory)",
                "0 re-sent, 0 missing",
                _yes(o["exact"] == o["cuts"] and k["exact"] == k["cuts"]),
            )
        )
    for kind in TRANSPORTS:
        o, d = (p["fanout"][f"{s}/{kind}"] for s in SYSTEMS)
        out.append(
            (
                f"protocol v2, one thread's subscribers ({kind}), emit → receipt",
                fan_cell(o),
                f"`langgraph dev`: {fan_cell(d)}",
                "p99 against the dev server's",
                "—",
            )
        )
    return out
