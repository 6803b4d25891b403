"""Logging setup: text for a terminal, or one JSON object per line for a log pipeline.

A JSON record holds ``time``, ``level``, ``logger``, ``message`` and, when known,
``run_id``, ``thread_id``, ``trace_id`` and the request's ``headers`` that
``langgraph.json`` names (``http.logging_headers``). The run and thread live in context variables
bound where a run executes (``Execution.execute``), so every record logged while it runs
carries them: the runtime's, LangGraph's, a node's own, in every task the execution
starts. ``trace_id`` is the OpenTelemetry trace when tracing is on, else the run id: one
key to search by either way.

Every handler redacts credentials (``RedactSecrets``): a credential-bearing query parameter
(an access log line of a request that put a key in its URL), an ``Authorization`` or
``X-Api-Key`` value, a stream token. Keys are never meant to reach a log, but a log is
where a mistake, a client's or a library's, would stay for months.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from outlast import tracing

RUN_ID: ContextVar[str | None] = ContextVar("outlast_run_id", default=None)
THREAD_ID: ContextVar[str | None] = ContextVar("outlast_thread_id", default=None)
# The request headers ``langgraph.json``'s ``http.logging_headers`` picks, bound for the
# request that is being served (``api/serving.py``): its records carry them.
HEADERS: ContextVar[dict[str, str] | None] = ContextVar("outlast_headers", default=None)

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

REDACTED = "(redacted)"
_SECRETS = [
    re.compile(
        r"(?i)([?&](?:access_token|stream_token|api_key|apikey|token|key|password|secret"
        r"|signature|sig|code)=)[^&\s\"']+"
    ),
    re.compile(r"(?i)(authorization[\"']?\s*[:=,]\s*[\"']?(?:bearer|basic|token)\s+)[^\s\"',]+"),
    re.compile(r"(?i)(x-api-key[\"']?\s*[:=,]\s*[\"']?)[^\s\"',]+"),
    re.compile(r"()\bst1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"),  # a stream token anywhere
]


def redact(text: str) -> str:
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def _redacted(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


class RedactSecrets(logging.Filter):
    """Rewrites a record's message and arguments in place (uvicorn's access formatter
    reads the arguments one by one, so they stay a tuple of the same length)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _redacted(v) for k, v in record.args.items()}
        return True


@contextlib.contextmanager
def bind_run(run_id: str, thread_id: str) -> Iterator[None]:
    run_token, thread_token = RUN_ID.set(run_id), THREAD_ID.set(thread_id)
    try:
        yield
    finally:
        THREAD_ID.reset(thread_token)
        RUN_ID.reset(run_token)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC)
        out: dict[str, Any] = {
            "time": when.isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        # An explicit `extra={"run_id": ...}` wins over the context.
        run_id = getattr(record, "run_id", None) or RUN_ID.get()
        thread_id = getattr(record, "thread_id", None) or THREAD_ID.get()
        trace_id = tracing.current_trace_id() or run_id
        for key, value in (("run_id", run_id), ("thread_id", thread_id), ("trace_id", trace_id)):
            if value is not None:
                out[key] = value
        headers = HEADERS.get()
        if headers:
            out["headers"] = {k: redact(v) for k, v in headers.items()}
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def setup(level: str, fmt: str) -> None:
    """Configure the root logger once (a no-op if something already did, as under pytest)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RedactSecrets())
    logging.basicConfig(level=getattr(logging, level.upper()), handlers=[handler])


def uvicorn_config(base: dict[str, Any]) -> dict[str, Any]:
    """uvicorn's logging configuration with ``RedactSecrets`` on each of its handlers."""
    config = {**base, "filters": {**base.get("filters", {}), "redact": {"()": RedactSecrets}}}
    config["handlers"] = {
        name: {**handler, "filters": [*handler.get("filters", []), "redact"]}
        for name, handler in base.get("handlers", {}).items()
    }
    return config
