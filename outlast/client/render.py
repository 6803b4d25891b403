"""How runs, waits and events read on a terminal: pure functions, no I/O."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from rich.table import Table

from outlast.client.sse import Event
from outlast.vocabulary import EventType, Frame, RunStatus


def compact(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"


def since(value: Any, now: dt.datetime | None = None) -> str:
    """``for 3m 05s`` from an ISO timestamp, or empty when there is none."""
    when = parse_time(value)
    if when is None:
        return ""
    now = now or dt.datetime.now(dt.UTC)
    return f"for {duration((now - when).total_seconds())}"


def wait_summary(wait: dict[str, Any], now: dt.datetime | None = None) -> str:
    kind = wait.get("kind") or "?"
    parts = [f"waiting ({kind})"]
    if wait.get("object") is not None:
        parts.append(f"on {compact(wait['object'], 80)}")
    how_long = since(wait.get("since"), now)
    if how_long:
        parts.append(how_long)
    return " ".join(parts)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p if isinstance(p, str) else str(p.get("text", ""))
            for p in content
            if isinstance(p, str | dict)
        )
    return compact(content, 10_000)


def result_text(result: Any) -> str:
    """The last message's text when the result follows the messages convention."""
    if isinstance(result, dict):
        messages = result.get("messages")
        if isinstance(messages, list) and messages:
            last = messages[-1]
            return _text(last.get("content") if isinstance(last, dict) else last)
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return compact(error, 2000) if error is not None else "(no detail)"
    if error.get("type") and error.get("message") is not None:
        return f"{error['type']}: {error['message']}"
    return str(error.get("reason") or error.get("message") or compact(error, 2000))


def _where(data: dict[str, Any]) -> str:
    ns = data.get("ns")
    return f" (in {ns})" if ns else ""


def progress_node(event: Event) -> str | None:
    """A node name a ``custom`` progress payload names, if it names one."""
    payload = event.data.get("data")
    if isinstance(payload, dict):
        for key in ("node", "step"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    ns = event.data.get("ns")
    if isinstance(ns, str) and ns:
        return ns.split("|")[-1].split(":")[0]
    return None


def _reason(d: dict[str, Any]) -> str:
    return f": {d['reason']}" if d.get("reason") else ""


def _created(d: dict[str, Any]) -> str:
    named = (("graph", "graph"), ("thread", "thread_id"))
    where = ", ".join(f"{label} {d[key]}" for label, key in named if d.get(key))
    return f"accepted ({where})" if where else "accepted"


def _wait_started(d: dict[str, Any]) -> str:
    wait = d.get("wait")
    return f"⏸ {wait_summary(wait if isinstance(wait, dict) else {})}"


def _wait_ended(d: dict[str, Any]) -> str:
    value = f": {compact(d['value'])}" if d.get("value") is not None else ""
    if d.get("kind") == "auth" and value:
        value = ": (credentials hidden)"
    return f"▶ wait ended ({d.get('how') or 'answered'}){value}"


def _activity(d: dict[str, Any]) -> str:
    note = f" — {d['note']}" if d.get("note") else ""
    return (
        f"activity: {d.get('name')} ({d.get('kind')}, {d.get('health')}, "
        f"{d.get('renewals', 0)} renewal(s)){note}"
    )


def _compensated(d: dict[str, Any]) -> str:
    how = " by hand" if d.get("reconciled") else f" by {d.get('tool', '?')}"
    return f"effect {d.get('effect_tool', '?')}: compensated{how}"


def _waiting(d: dict[str, Any]) -> str:
    count = d.get("waits")
    return f"waiting ({count} open wait{'s' if count != 1 else ''})" if count else "waiting"


# One line per event type worth a line; None: shown another way (message deltas go
# inline; a LangGraph stream part says what the events around it say).
_LINES: dict[str, Callable[[dict[str, Any]], str | None]] = {
    EventType.RUN_CREATED: _created,
    EventType.RUN_STARTED: lambda d: f"started (attempt {d.get('attempt', '?')})",
    EventType.RUN_RESUMED: lambda d: (
        f"resumed from its last checkpoint (attempt {d.get('attempt', '?')})"
    ),
    EventType.NODE_UPDATED: lambda d: f"✓ {d.get('node', '?')}{_where(d)}",
    EventType.CUSTOM: lambda d: f"· {compact(d.get('data'))}{_where(d)}",
    EventType.MESSAGE_DELTA: lambda d: None,
    EventType.WAIT_STARTED: _wait_started,
    EventType.WAIT_ENDED: _wait_ended,
    EventType.WAIT_RENEWED: lambda d: (
        f"wait {d.get('wait_id')} is still alive ({d.get('renewals')} renewal(s))"
    ),
    EventType.WAIT_PROBE_FAILED: lambda d: (
        f"probe of wait {d.get('wait_id')} failed ({d.get('failures')}×): {d.get('error')}"
    ),
    EventType.STREAM: lambda d: None,
    EventType.ACTIVITY: _activity,
    EventType.SUPERVISOR_VERDICT: lambda d: (
        f"supervisor (tier {d.get('tier')}): {d.get('verdict')} — {d.get('reason', '')}"
    ),
    EventType.BUDGET_CHECKPOINT: lambda d: (
        f"budget: {d.get('level')} limit of {d.get('dimension')} reached "
        f"({d.get('used')} of {d.get('limit')})"
    ),
    EventType.EFFECT_COMPENSATED: _compensated,
    EventType.RUN_WAITING: _waiting,
    EventType.RUN_QUEUED: lambda d: f"queued{_reason(d)}",
    EventType.RUN_CANCELLING: lambda d: f"cancelling{_reason(d)}",
    EventType.RUN_RELEASED: lambda d: f"released back to the queue{_reason(d)}",
    EventType.RUN_REQUEUED: lambda d: f"requeued{_reason(d)}",
    EventType.RUN_COMPLETED: lambda d: "completed",
    EventType.RUN_FAILED: lambda d: f"failed: {error_text(d.get('error') or d)}",
    EventType.RUN_CANCELLED: lambda d: f"cancelled{_reason(d)}",
    Frame.SNAPSHOT: lambda d: (
        f"snapshot: status {d.get('status', '?')}, last seq {d.get('last_seq', '?')}"
    ),
}
_EFFECT_STEPS = {
    EventType.EFFECT_STARTED,
    EventType.EFFECT_DONE,
    EventType.EFFECT_FAILED,
    EventType.EFFECT_UNKNOWN,
    EventType.EFFECT_REPLAYED,
}


def event_line(event: Event) -> str | None:
    """One log line for an event worth a line, else ``None`` (message deltas go inline)."""
    d = event.data
    line = _LINES.get(event.type)
    if line is not None:
        return line(d)
    if event.type in _EFFECT_STEPS:
        extra = " (reconciled)" if d.get("reconciled") else ""
        return f"effect {d.get('tool', '?')}: {event.type.removeprefix('effect.')}{extra}"
    if event.type == Frame.GAP:
        return gap_line(d, event.seq)
    return f"{event.type}: {compact(d)}"


def gap_line(d: dict[str, Any], seq: int | None = None) -> str:
    """The gap's own id is the last pruned seq; the payload may say more."""
    first, last = d.get("from_seq"), d.get("to_seq")
    if first is None and isinstance(d.get("requested_after"), int):
        first = d["requested_after"] + 1
    if last is None and isinstance(d.get("oldest_available"), int):
        last = d["oldest_available"] - 1
    if last is None:
        last = seq
    if first is None:
        span = "earlier events"
    elif last is None:
        span = f"all events from seq {first}"
    else:
        span = f"events {first}–{last}"
    return f"⚠ gap: {span} were pruned by retention; the run's snapshot follows"


def snapshot_lines(run: dict[str, Any]) -> list[str]:
    lines = [
        f"run      {run.get('id')}",
        f"status   {run.get('status')}",
        f"graph    {run.get('graph')}",
        f"thread   {run.get('thread_id')}",
        f"attempts {run.get('attempts')}/{run.get('max_attempts', '?')}",
        f"created  {run.get('created_at')}   updated {run.get('updated_at')}",
    ]
    wait = run.get("wait")
    if isinstance(wait, dict):
        lines.append(f"wait     {wait_summary(wait)} (id {wait.get('id')})")
        if wait.get("prompt") is not None:
            lines.append(f"prompt   {compact(wait['prompt'], 500)}")
    if run.get("status") == RunStatus.COMPLETED:
        lines.append("result   " + result_text(run.get("result")).replace("\n", "\n         "))
    elif run.get("error") is not None:
        lines.append(f"error    {error_text(run.get('error'))}")
    return lines


def runs_table(runs: list[dict[str, Any]]) -> Table:
    table = Table(box=None, pad_edge=False)
    table.add_column("id", no_wrap=True, min_width=36)
    table.add_column("status", no_wrap=True)
    table.add_column("graph", no_wrap=True)
    table.add_column("thread", overflow="fold")
    table.add_column("attempts", justify="right")
    table.add_column("created", no_wrap=True)
    for run in runs:
        status = str(run.get("status"))
        wait = run.get("wait")
        if isinstance(wait, dict):
            status += f" ({wait.get('kind')})"
        table.add_row(
            str(run.get("id")),
            status,
            str(run.get("graph")),
            str(run.get("thread_id")),
            str(run.get("attempts")),
            str(run.get("created_at", ""))[:19],
        )
    return table
