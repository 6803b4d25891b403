"""The words outside Python agree with ``outlast.vocabulary``: the SQL that writes events and
constrains statuses, the web console's JavaScript, and the terminal client's renderer.

Python code imports the vocabulary, so mypy holds it; these are the places that spell the
words as literals and would drift unnoticed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from outlast.client.render import compact, event_line
from outlast.client.sse import Event
from outlast.vocabulary import (
    TERMINAL_EVENTS,
    DeliveryStatus,
    EffectStatus,
    EventType,
    Frame,
    RunStatus,
    WaitKind,
    WaitStatus,
    WebhookEvent,
)

PACKAGE = Path(__file__).resolve().parents[1] / "outlast"
SQL = sorted((PACKAGE / "store" / "sql").rglob("*.sql"))
CONSOLE = (PACKAGE / "api" / "static" / "console.js").read_text()


def _js_strings(name: str) -> set[str]:
    """The string literals of a ``const NAME = [...]`` or ``new Set([...])`` in console.js."""
    match = re.search(rf"const {name} = (?:new Set\()?\[(.*?)\]", CONSOLE, re.S)
    assert match, f"console.js has no {name}"
    return set(json.loads("[" + match.group(1).rstrip().rstrip(",") + "]"))


def _check_list(sql: str, column: str) -> set[str]:
    match = re.search(
        rf"{column}\s+text NOT NULL(?: DEFAULT '[^']*')?\s+CHECK \({column} IN\s*\((.*?)\)\)",
        sql,
        re.S | re.I,
    )
    assert match, f"no CHECK on {column}"
    return set(re.findall(r"'([^']+)'", match.group(1)))


def test_the_sql_appends_only_event_types_of_the_vocabulary() -> None:
    # Every dotted word quoted in a query is an event type (the CTEs that append events).
    quoted = {word for path in SQL for word in re.findall(r"'([a-z]+\.[a-z_]+)'", path.read_text())}
    assert quoted, "the queries append no event by name: this check looks at the wrong files"
    assert quoted <= {str(t) for t in EventType}, quoted - {str(t) for t in EventType}


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_the_schema_constrains_statuses_and_kinds_to_the_vocabulary(backend: str) -> None:
    runs = (PACKAGE / "store" / "sql" / backend / "0001_runs_and_events.sql").read_text()
    waits = (PACKAGE / "store" / "sql" / backend / "0002_waits_and_signals.sql").read_text()
    assert _check_list(runs, "status") == {str(s) for s in RunStatus}
    assert _check_list(waits, "status") == {str(s) for s in WaitStatus}
    assert _check_list(waits, "kind") == {str(k) for k in WaitKind}
    effects = (PACKAGE / "store" / "sql" / backend / "0006_effects.sql").read_text()
    assert _check_list(effects, "status") == {str(s) for s in EffectStatus}
    outbox = (PACKAGE / "store" / "sql" / backend / "0012_webhooks.sql").read_text()
    assert _check_list(outbox, "status") == {str(s) for s in DeliveryStatus}


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_the_outbox_trigger_hears_exactly_the_events_one_can_subscribe_to(backend: str) -> None:
    sql = (PACKAGE / "store" / "sql" / backend / "0012_webhooks.sql").read_text()
    match = re.search(r"WHEN \(?NEW\.type IN \((.*?)\)", sql, re.S)
    assert match, "the outbox trigger has no WHEN on the event type"
    assert set(re.findall(r"'([^']+)'", match.group(1))) == {str(e) for e in WebhookEvent}
    assert {str(e) for e in WebhookEvent} <= {str(t) for t in EventType}


def test_the_console_listens_for_every_event_type_and_knows_the_terminal_ones() -> None:
    # The console's EventSource only hears the types it registers a listener for.
    assert _js_strings("EVENT_TYPES") == {str(t) for t in EventType} | {str(f) for f in Frame}
    assert _js_strings("TERMINAL") == {str(t) for t in TERMINAL_EVENTS}


@pytest.mark.parametrize("kind", [*EventType, *Frame], ids=str)
def test_the_terminal_client_renders_every_event_type_on_purpose(kind: str) -> None:
    """No type falls through to the catch-all line (``<type>: <payload>``), which is there
    for types a newer server may add, not for the ones outlast has today."""
    data = {"marker": "m"}
    assert event_line(Event(type=kind, seq=1, data=data)) != f"{kind}: {compact(data)}"


def test_the_terminal_client_stops_on_exactly_the_terminal_events() -> None:
    ends = {str(t) for t in [*EventType, *Frame] if Event(type=t, seq=1).terminal}
    assert ends == {str(t) for t in TERMINAL_EVENTS}
