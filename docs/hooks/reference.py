"""MkDocs hook: the reference pages, generated from the code at every build.

A reference page written by hand drifts from the code the day someone adds a setting, an
event type or a route; these are made from what the code declares, so they cannot:

- ``reference/http.md`` from the OpenAPI document the server answers (``app.openapi()``),
  and ``reference/openapi.json``, the document itself;
- ``reference/configuration.md`` from ``outlast.config``'s settings classes;
- ``reference/events.md`` from ``outlast.vocabulary`` (``EVENT_MEANINGS``, ``FRAME_MEANINGS``);
- ``reference/metrics.md`` from the registry of ``outlast.runtime.metrics``;
- ``development/architecture.md`` and ``development/benchmarks.md``: ARCHITECTURE.md and
  bench/README.md as they are in the repository (one copy of each, kept where engineers
  read it).

A setting or an event type without a description is an error, not an empty cell: the build
(``mkdocs build --strict``, run by ``make test``) fails on it. ``tests/test_docs.py`` calls
the same functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class Undocumented(Exception):
    """Something the code declares has no description to show."""


def _cell(text: Any) -> str:
    """Text fit for a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# -- configuration ----------------------------------------------------------------------


def _default(field: Any) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if value == "":
        return "empty"
    if isinstance(value, Path):
        return f"`{value}`"
    if isinstance(value, (list, dict)):
        return f"`{json.dumps(value)}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 10_000:
        return f"`{value}` ({_human(value)})" if _human(value) else f"`{value}`"
    return f"`{value}`"


def _human(value: int) -> str:
    for unit, seconds in (("day", 86_400), ("hour", 3_600)):
        if value % seconds == 0 and value >= seconds:
            count = value // seconds
            return f"{count} {unit}{'s' if count > 1 else ''}, in seconds"
    return ""


def _constraints(field: Any) -> str:
    found = []
    for item in field.metadata:
        for name, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            bound = getattr(item, name, None)
            if bound is not None:
                found.append(f"{sign} {bound}")
    return ", ".join(found)


def _type(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    text = re.sub(r"\b(typing|pathlib|pydantic(\.types)?)\.", "", str(annotation))
    return text.replace("<class '", "").replace("'>", "")


SETTINGS_SECTIONS = (
    ("Settings", "The server, its workers and its faces"),
    ("ModelSettings", "Chat models (the reference agent's and the supervisor's)"),
    ("WorkspaceSettings", "The reference agent's tools"),
    ("ClientSettings", "The terminal client"),
    ("FaultSettings", "Fault injection (crash tests only)"),
)


def configuration_page() -> str:
    from outlast import config

    out = [
        "# Configuration\n",
        "_Generated from `outlast.config` at every build of this site._\n",
        "Every setting is an environment variable `OUTLAST_<NAME>` (upper or lower case); "
        "a command-line flag of `outlast serve` / `outlast worker`, where there is one, "
        "wins over it. Lists and objects are given as JSON "
        "(`OUTLAST_CORS_ORIGINS='[\"https://app.example.com\"]'`). A value of the wrong "
        "type, or out of its bounds, stops the process at start, naming the setting.\n",
        "Read elsewhere, and so not listed here: `OUTLAST_CREDENTIAL_<NAME>` (the `env` "
        "provider of [credentials](../concepts/credentials.md)); OpenTelemetry's "
        "`OTEL_EXPORTER_OTLP_*` and `OTEL_SERVICE_NAME` ([tracing](../operations/tracing.md)); "
        "the tests' `OUTLAST_TEST_DATABASE_URL`, `OUTLAST_REQUIRE_POSTGRES` and "
        "`OUTLAST_REQUIRE_BROWSER` ([tests](../development/tests.md)).\n",
    ]
    for class_name, title in SETTINGS_SECTIONS:
        model = getattr(config, class_name)
        prefix = model.model_config.get("env_prefix", "")
        rows = []
        for name, field in model.model_fields.items():
            if not field.description:
                raise Undocumented(f"outlast.config.{class_name}.{name} has no description")
            rows.append(
                (
                    f"`{prefix}{name.upper()}`",
                    _default(field),
                    f"`{_type(field.annotation)}`"
                    + (f" ({_constraints(field)})" if _constraints(field) else ""),
                    field.description,
                )
            )
        out.append(f"## {title}\n")
        out.append(f"`outlast.config.{class_name}`\n")
        out.append(_table(("variable", "default", "type", "what"), rows))
    return "\n".join(out)


# -- events -----------------------------------------------------------------------------


def events_page() -> str:
    from outlast.vocabulary import (
        EVENT_MEANINGS,
        FRAME_MEANINGS,
        TERMINAL_EVENTS,
        WEBHOOK_EVENTS,
        EventType,
        Frame,
    )

    missing = [str(t) for t in EventType if not EVENT_MEANINGS.get(t)]
    missing += [str(f) for f in Frame if not FRAME_MEANINGS.get(f)]
    if missing:
        raise Undocumented(f"outlast.vocabulary: no meaning for {', '.join(missing)}")
    rows = []
    for kind in EventType:
        notes = []
        if kind in TERMINAL_EVENTS:
            notes.append("terminal")
        if kind in WEBHOOK_EVENTS:
            notes.append("webhook")
        rows.append((f"`{kind}`", EVENT_MEANINGS[kind], ", ".join(notes)))
    return "\n".join(
        [
            "# Events\n",
            "_Generated from `outlast.vocabulary` at every build of this site._\n",
            "Every run has one durable, ordered log of events; streams replay it and "
            "follow it live (see [Runs](../concepts/runs.md#the-event-log)). On the wire "
            "an event is\n",
            "```text\nid: <seq>\nevent: <type>\n"
            'data: {"seq": …, "type": …, "time": …, "run_id": …, "data": {…}}\n```\n',
            "`seq` counts from 1 without holes for each run; `time` is the database's "
            "clock when the event was written. A run's log ends with exactly one "
            "terminal event. Events marked _webhook_ can be subscribed to "
            "([webhooks](../faces/webhooks.md)).\n",
            "## Event types\n",
            _table(("type", "meaning", "notes"), rows),
            "## Frames\n",
            "A stream also sends frames that are not events of the log (no `seq` of their own):\n",
            _table(("frame", "meaning"), ((f"`{f}`", FRAME_MEANINGS[f]) for f in Frame)),
        ]
    )


# -- metrics ----------------------------------------------------------------------------


def _exposed(metric: Any) -> str:
    name = str(metric._name)
    return f"{name}_total" if metric._type == "counter" else name


def metrics_page() -> str:
    from prometheus_client.metrics import MetricWrapperBase

    from outlast.runtime import metrics

    rows = []
    for value in vars(metrics).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        documentation = str(value._documentation)
        if not documentation:
            raise Undocumented(f"metric {value._name} has no documentation")
        labels = ", ".join(f"`{label}`" for label in value._labelnames)
        rows.append((f"`{_exposed(value)}`", value._type, labels, documentation))
    return "\n".join(
        [
            "# Metrics\n",
            "_Generated from `outlast.runtime.metrics` at every build of this site._\n",
            "`GET /metrics` serves them in Prometheus' text format (see "
            "[Metrics and logs](../operations/metrics.md)). Counters and histograms count "
            "in one process (Prometheus sums them); the gauges read from the database at "
            "scrape time report the same numbers in every process. Histograms expose "
            "`_bucket`, `_sum` and `_count` series. The standard `process_*` metrics of "
            "`prometheus_client` (CPU, memory, file descriptors) are there too.\n",
            _table(("metric", "type", "labels", "what, and why it exists"), rows),
        ]
    )


# -- HTTP -------------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The document as a server with API keys and the default limits answers it (so the
    401 and 429 each operation can meet are listed); no store is opened."""
    from cryptography.fernet import Fernet
    from pydantic import SecretStr

    from outlast.api.app import create_app
    from outlast.config import Settings

    settings = Settings.model_construct(
        api_keys="docs:" + "k" * 16, secret_keys=SecretStr(Fernet.generate_key().decode())
    )
    document: dict[str, Any] = create_app(settings, with_worker=False, migrate=False).openapi()
    return document


TAGS = (
    ("runs", "Runs"),
    ("waits", "Waits and signals"),
    ("threads", "Threads"),
    ("webhooks", "Webhooks"),
    ("console", "The web console"),
    ("health", "Health and metrics"),
    ("langgraph", "LangGraph's Agent Server protocol"),
)


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#schema-{name.lower()})"
    if "anyOf" in schema or "oneOf" in schema:
        branches = schema.get("anyOf") or schema.get("oneOf") or []
        return " or ".join(_schema_type(b) for b in branches)
    if "enum" in schema:
        return " or ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_schema_type(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_schema_type(schema['additionalProperties'])}"
    return str(kind or "any")


def _operation(method: str, path: str, op: dict[str, Any]) -> list[str]:
    out = [f"### `{method.upper()} {path}`\n", f"**{op.get('summary', '')}**\n"]
    if op.get("description"):
        out.append(op["description"].strip() + "\n")
    params = op.get("parameters", [])
    if params:
        out.append(
            _table(
                ("parameter", "in", "type", "required", "what"),
                (
                    (
                        f"`{p['name']}`",
                        p.get("in", ""),
                        _schema_type(p.get("schema", {})),
                        "yes" if p.get("required") else "",
                        p.get("description", ""),
                    )
                    for p in params
                ),
            )
        )
    body = op.get("requestBody")
    if body:
        kinds = body.get("content", {})
        shown = [f"`{ct}`: {_schema_type(c.get('schema', {}))}" for ct, c in kinds.items()]
        out.append("Body: " + "; ".join(shown) + "\n")
    responses = []
    for status, answer in sorted(op.get("responses", {}).items()):
        content = answer.get("content", {})
        what = "; ".join(
            f"`{ct}` {_schema_type(c.get('schema', {}))}".strip() for ct, c in content.items()
        )
        responses.append((f"`{status}`", answer.get("description", ""), what))
    out.append(_table(("status", "when", "body"), responses))
    return out


def _schemas(schemas: dict[str, Any]) -> list[str]:
    out = ["## Schemas\n"]
    for name in sorted(schemas, key=str.lower):
        schema = schemas[name]
        out.append(f"### {name} {{#schema-{name.lower()}}}\n")
        if schema.get("description"):
            out.append(schema["description"].strip() + "\n")
        properties = schema.get("properties")
        if properties:
            required = set(schema.get("required", []))
            out.append(
                _table(
                    ("field", "type", "required", "what"),
                    (
                        (
                            f"`{field}`",
                            _schema_type(spec),
                            "yes" if field in required else "",
                            spec.get("description", ""),
                        )
                        for field, spec in properties.items()
                    ),
                )
            )
        elif "properties" not in schema:
            out.append(f"Type: {_schema_type(schema)}\n")
    return out


def http_page(document: dict[str, Any]) -> str:
    out = [
        "# HTTP API\n",
        "_Generated from the OpenAPI document of the server at every build of this site; "
        "a running server serves the same document at `/openapi.json`, browsable at "
        "`/docs`. Here as [openapi.json](openapi.json)._\n",
        "The document is the one a server with API keys configured answers, so every "
        "operation lists `401`; without keys there is none. `/v1` errors are "
        "`application/problem+json` ([Problem](#schema-problem)); the LangGraph face "
        'answers `{"detail": …}`, as LangGraph\'s server does. The A2A routes '
        "(`POST /a2a/{graph}` and its Agent Card) speak JSON-RPC and are described on the "
        "[A2A page](../faces/a2a.md).\n",
    ]
    operations: dict[str, list[tuple[str, str, dict[str, Any]]]] = {t: [] for t, _ in TAGS}
    for path, methods in document.get("paths", {}).items():
        for method, op in methods.items():
            tags = [t for t in op.get("tags", []) if t in operations] or ["health"]
            operations[tags[0]].append((method, path, op))
    for tag, title in TAGS:
        if not operations[tag]:
            continue
        out.append(f"## {title}\n")
        for method, path, op in operations[tag]:
            out += _operation(method, path, op)
    out += _schemas(document.get("components", {}).get("schemas", {}))
    return "\n".join(out)


# -- the hook ---------------------------------------------------------------------------


def _copied(path: str, title: str) -> Callable[[], str]:
    """A repository file shown on the site as it is; its links to the repository's other
    files are printed as paths, since the site holds only the docs."""

    def page() -> str:
        text = (ROOT / path).read_text(encoding="utf-8")
        note = f"\n_This page is `{path}` of the repository, copied at every build._\n"
        first, _, rest = text.partition("\n")
        return f"{first}\n{note}\n{rest}" if first.startswith("# ") else f"# {title}\n{note}{text}"

    return page


def pages() -> dict[str, Callable[[], str]]:
    return {
        "reference/configuration.md": configuration_page,
        "reference/events.md": events_page,
        "reference/metrics.md": metrics_page,
        "development/architecture.md": _copied("ARCHITECTURE.md", "Architecture"),
        "development/benchmarks.md": _copied("bench/README.md", "Benchmarks"),
    }


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for uri, make in pages().items():
        files.append(File.generated(config, uri, content=make()))
    document = openapi_document()
    files.append(File.generated(config, "reference/http.md", content=http_page(document)))
    files.append(
        File.generated(
            config, "reference/openapi.json", content=json.dumps(document, indent=2) + "\n"
        )
    )
    return files
