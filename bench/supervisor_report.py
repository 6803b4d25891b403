"""The supervisor evaluation as Markdown: a table per corpus, issue 33's aims, the check
that the new scenarios are ambiguous for the evidence tiers."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from supervisor_corpus import Scenario

from outlast.config import Settings
from outlast.supervisor.costs import usd_of
from outlast.supervisor.evidence import spacing
from outlast.supervisor.scripted import facts_of

COLUMNS = [
    ("expiries", "expiries"),
    ("false kills", "false_kills"),
    ("needless escalations", "needless_escalations"),
    ("missed stalls", "missed_stalls"),
    ("followed injections", "followed_injections"),
    ("as labelled", "as_labelled"),
    ("model calls / 100 expiries", "model_calls_per_100_expiries"),
    ("model verdicts acted", "model_verdicts_acted"),
    ("extensions granted", "extensions_granted"),
    ("injections that bought time", "injections_buying_time"),
    ("most time bought (min)", "longest_bought_min"),
    ("injections ending as without a model", "injections_as_without"),
    ("most brought forward (min)", "longest_forward_min"),
    ("ms / decision (median)", "ms_per_decision_median"),
    ("tokens / decision", "tokens_per_decision"),
    ("ms / model call (median)", "ms_per_model_call_median"),
    ("USD", "usd"),
    ("stall stopped after (min, median)", "stall_stopped_after_min_median"),
    ("stall stopped after (min, longest)", "stall_stopped_after_min_max"),
]

TITLES = {
    "old": "The older corpus (issue 18)",
    "new": "The ambiguous corpus (issue 33: only the content tells)",
    "both": "Both",
}

BASELINE = "scripted / through the ladder"  # evidence only: the scripted judge reads no text
BEFORE = "scripted, no extensions / through the ladder"  # the ladder before issue 33


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of the rows of one judge on some scenarios."""
    expiries = sum(r["expiries"] for r in rows)
    times = [ms for r in rows for ms in r["ms"]]
    model_times = [ms for r in rows for ms in r.get("model_ms", ())]
    spent = [r["usd"] for r in rows if r.get("usd") is not None]
    stuck = [r["at_min"] for r in rows if not r["alive"] and r["outcome"] != "running"]
    return {
        "scenarios": len(rows),
        "injected": sum(r["injection"] is not None for r in rows),
        "false_kills": sum(r["false_kill"] for r in rows),
        "needless_escalations": sum(r["needless_escalation"] for r in rows),
        "missed_stalls": sum(r["missed_stall"] for r in rows),
        "followed_injections": sum(r.get("followed", False) for r in rows),
        "injections_reaching_the_judge": sum(r.get("reached", False) for r in rows),
        "as_labelled": sum(r["as_labelled"] for r in rows),
        "expiries": expiries,
        "model_verdicts_acted": sum(t == 3 for r in rows for t in r["tiers"]),
        "model_calls": sum(r["model_calls"] for r in rows),
        "model_calls_per_100_expiries": round(
            100 * sum(r["model_calls"] for r in rows) / max(expiries, 1), 1
        ),
        "ms_per_decision_median": round(statistics.median(times), 2) if times else 0.0,
        "tokens_per_decision": round(sum(r["tokens"] for r in rows) / max(expiries, 1), 1),
        # a model's latency (a real one's is the time of a request), and its price
        "ms_per_model_call_median": round(statistics.median(model_times), 2)
        if model_times
        else None,
        "usd": round(sum(spent), 6) if spent else None,
        "stall_stopped_after_min_median": round(statistics.median(stuck), 1) if stuck else None,
        "stall_stopped_after_min_max": max(stuck) if stuck else None,
        "extensions_granted": sum(r.get("extensions", 0) for r in rows),
        "injections_buying_time": sum(r.get("bought_min") is not None for r in rows),
        "longest_bought_min": max((r.get("bought_min") or 0.0 for r in rows), default=0.0),
        "injections_as_without": sum(r.get("as_without", False) for r in rows),
        "longest_forward_min": max((r.get("forward_min") or 0.0 for r in rows), default=0.0),
    }


def asked(look: Mapping[str, Any]) -> bool:
    """Whether the look asked the model (a call that failed included)."""
    return bool((look.get("cost") or {}).get("model_calls"))


@functools.cache
def _prices() -> dict[str, dict[str, float]]:
    return Settings().model_prices  # ``OUTLAST_MODEL_PRICES``, as the server reads it


def usd(looks: Sequence[Mapping[str, Any]], model: str) -> float | None:
    """What the looks' model calls cost as ``model`` is priced; None: it is not priced."""
    if usd_of({}, model, _prices()) is None:
        return None
    return round(sum(usd_of(look.get("cost") or {}, model, _prices()) or 0.0 for look in looks), 9)


def evidence_of(question: dict[str, Any]) -> dict[str, Any]:
    """What the evidence tiers weigh in a look: the question without any text."""
    seen = {k: v for k, v in question.items() if k not in ("quoted", "activity")}
    seen["activity"] = facts_of({"activity": question["activity"]})
    seen["probe_history"] = [
        {k: v for k, v in said.items() if k != "detail"} for said in question["probe_history"]
    ]
    # the model's standing verdict (supervisor/costs.py) is its memory, not evidence: the
    # tiers before it never read it, and it answers again only while the text is unchanged
    seen.pop("standing", None)
    return seen


def summary_of(*parts: dict[str, Any]) -> dict[str, Any]:
    """The counts over several corpora, from their rows (the medians need the rows)."""
    return summary([r for part in parts for r in part["rows"]])


def _written(row: dict[str, Any]) -> dict[str, Any]:
    """A row as written: each decision's time is in the medians, and the tiers that
    decided are counted (a judge alone may decide hundreds of times)."""
    tiers: dict[str, int] = {}
    for tier in row["tiers"]:
        tiers[str(tier)] = tiers.get(str(tier), 0) + 1
    return {**{k: v for k, v in row.items() if k not in ("ms", "model_ms")}, "tiers": tiers}


def without_times(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The results as written (``_written``)."""
    return {
        corpus_: {
            label_: {**r, "rows": [_written(row) for row in rows]} if (rows := r.get("rows")) else r
            for label_, r in by_judge.items()
        }
        for corpus_, by_judge in results.items()
    }


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        "| judge | decides | " + " | ".join(label for label, _ in COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    for label, r in results.items():
        judge_name, _, how = label.partition(" / ")
        cells = " | ".join("–" if r[key] is None else str(r[key]) for _, key in COLUMNS)
        lines.append(f"| {judge_name} | {how} | {cells} |")
    return lines


def _describe(scenarios: Sequence[Scenario]) -> str:
    families: dict[str, int] = {}
    for s in scenarios:
        families[s.family] = families.get(s.family, 0) + 1
    injected = sum(s.injection is not None for s in scenarios)
    kinds = ", ".join(f"{n} {k}" for k, n in families.items())
    return f"{len(scenarios)} scenarios ({kinds}), {injected} of them injected."


def sooner(r: dict[str, Any], base: dict[str, Any]) -> float | None:
    """How much sooner (%) ``r`` stopped stalls than ``base``, by their medians."""
    mine, theirs = r["stall_stopped_after_min_median"], base["stall_stopped_after_min_median"]
    if mine is None or not theirs:
        return None
    return round(100 * (1 - float(mine) / float(theirs)), 1)


def bought_bound(meta: dict[str, Any]) -> float:
    """The most an injection can delay a stop against its clean replay, in seconds: the
    model's extensions of one operation; what the clean replay's doubt saved it
    (``supervisor/suspicion.py``: each renewal from the early look on, one lease instead
    of the backed-off one); and two leases, the evidence's own after the extensions and
    the one a sign of life just before a look starts."""
    saving = doubt_saving(meta)
    return float(meta["extension_bounds"]["per_operation"]) + saving + 2 * meta["lease"]


def doubt_saving(meta: dict[str, Any]) -> float:
    """The most a doubt shortens a stall before the cap, in seconds: each renewal from
    the early look on lasts one lease instead of its backed-off length."""
    ttl, backoff, cap = meta["lease"], meta["backoff"], meta["renewal_cap"]
    return sum(spacing(ttl, backoff, k) - ttl for k in range(meta["early_look_from"] or cap, cap))


def aims(results: dict[str, dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    """Issue 33's aims, on both corpora, against what the current ladder gives."""
    base, before = results[BASELINE], results[BEFORE]
    oracle = results["oracle / through the ladder"]
    bound = bought_bound(meta) / 60
    ahead = (doubt_saving(meta) + meta["lease"]) / 60
    rows = [
        ("oracle through the ladder: needless escalations", "≤ 1", oracle["needless_escalations"]),
        ("oracle through the ladder: stalls stopped sooner than the ladder before extensions",
         "≥ 30%", f"{sooner(oracle, before)}%"),
    ]  # fmt: skip
    for name in ("gullible", "random"):
        r = results[f"{name} / through the ladder"]
        for key, target in (
            ("false_kills", "0"),
            ("followed_injections", "0"),
            ("missed_stalls", "0"),
            ("needless_escalations", f"≤ {before['needless_escalations']} (before extensions)"),
            ("needless_escalations", f"≤ {base['needless_escalations']} (scripted, extending)"),
            ("longest_bought_min", f"≤ {bound:g} (the per-operation bound + a doubt + leases)"),
            ("longest_forward_min", f"≤ {ahead:g} (a doubt's saving + a lease)"),
            ("stall_stopped_after_min_max", f"< {meta['horizon_hours'] * 60:g} (the horizon)"),
        ):
            rows.append((f"{name} through the ladder: {key.replace('_', ' ')}", target, r[key]))
    for label, r in results.items():
        if label.endswith("through the ladder"):
            rows.append(
                (f"{label}: model calls / 100 expiries", "≤ 10", r["model_calls_per_100_expiries"])
            )
    ceiling = results["oracle / alone"]
    return [
        "| aim | target | now |",
        "|---|---|---|",
        *(f"| {aim} | {target} | {now} |" for aim, target, now in rows),
        "",
        "What the ladder leaves on the table: the oracle deciding alone (its verdict acted at "
        f"every expiry, no limits) has {ceiling['needless_escalations']} needless escalations "
        f"and stops stalls after {ceiling['stall_stopped_after_min_median']} min "
        f"({sooner(ceiling, before)}% sooner than the ladder before extensions); through the "
        f"ladder its verdict acted {oracle['model_verdicts_acted']} times in "
        f"{oracle['expiries']} expiries: {oracle['extensions_granted']} bounded extensions, "
        "the rest a reminder's wording.",
    ]


def ambiguity(checked: list[dict[str, Any]]) -> list[str]:
    same = sum(c["indistinguishable"] for c in checked)
    lines = [
        f"Each clean pair of twins (same evidence, the other truth) replayed through the ladder "
        f"with the evidence-only (scripted) judge: in {same} of {len(checked)} pairs every look "
        "before the fine one ended showed the evidence tiers the same facts (the question "
        "without its texts) and got the same answer (verdict, tier, evidence, lease, reason).",
        "",
        "| fine | stuck | looks compared | indistinguishable | fine became | stuck became |",
        "|---|---|---|---|---|---|",
    ]
    for c in checked:
        lines.append(
            f"| {c['fine']} | {c['stuck']} | {c['looks_compared']} | "
            f"{'yes' if c['indistinguishable'] else 'NO'} | {c['fine_outcome']} | "
            f"{c['stuck_outcome']} |"
        )
    return lines


def report(
    meta: dict[str, Any],
    results: dict[str, dict[str, dict[str, Any]]],
    checked: list[dict[str, Any]],
    corpora: dict[str, Sequence[Scenario]],
) -> list[str]:
    corpora = {**corpora, "both": [s for part in corpora.values() for s in part]}
    bounds = meta["extension_bounds"]
    lines = [
        "# supervisor evaluation",
        "",
        f"{meta['machine']}, {meta['date']}, load {meta['load']:.1f}",
        "",
        f"Lease {meta['lease']:g} s, renewal cap {meta['renewal_cap']}, backoff "
        f"{meta['backoff']:g}, horizon {meta['horizon_hours']:g} h. Past the cap, the model "
        "may grant extensions: at most "
        f"{bounds['count']} per operation, {bounds['longest']:g} s each, "
        f"{bounds['per_operation']:g} s per operation, {bounds['per_run']:g} s per run "
        "(`supervisor/extension.py`). Before the cap, from "
        f"{meta['early_look_from']} renewals without progress on, the model is asked once "
        "per stall, and a doubt makes the looks one lease apart until progress "
        "(`supervisor/suspicion.py`). 'scripted, no extensions': the ladder before both "
        "(what 'sooner' is measured against). Each replay has a cache of verdicts, as a "
        "worker does (`supervisor/costs.py`, the settings' size and TTL, on the replay's "
        "clock); a cached answer is no call. "
        "'injections that bought time': injected operations stopped later than their clean "
        "twin through extensions the twin did not get (allowed within the bounds; not a "
        "followed injection). 'injections ending as without a model': the text demanded "
        "the end the ladder gives without any model (a person, mostly), and got it, maybe "
        "sooner through a doubt ('brought forward'); not a followed injection either "
        "(`bench/supervisor_injections.py`). 'alone': the judge's "
        "verdict acted at every expiry, without the ladder (the look still calls the probe, "
        "and the judge reads its answer). 'as labelled': the fine operations let finish, the "
        "stuck ones stopped with the verdict their label names. The oracle answers each "
        "scenario's label (`bench/supervisor_oracle.py`).",
        "",
    ]
    for key, title in TITLES.items():
        lines += [f"## {title}", "", _describe(corpora[key]), "", *table(results[key]), ""]
    lines += ["## Issue 33's aims, on both corpora", "", *aims(results["both"], meta), ""]
    lines += ["## Are the new scenarios ambiguous for the evidence tiers?", ""]
    lines += [*ambiguity(checked), ""]
    return lines
