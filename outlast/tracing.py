"""Optional OpenTelemetry tracing: a span per run execution, a child span per node task.

On only when the SDK and the OTLP exporter are installed (``pip install 'outlast[otel]'``)
and ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; the exporter reads the other standard
``OTEL_EXPORTER_OTLP_*`` variables (headers, timeout, compression, certificates), and
``OTEL_SERVICE_NAME`` names the service (default ``outlast``). Otherwise every function
here is a no-op and nothing of OpenTelemetry is imported, so it stays an optional
dependency. The environment is read at the first span (or by ``configure``; tests call
``use``). outlast keeps its own tracer provider rather than the global one: enabling it
does not reroute what an application traces for itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

_tracer: Any = None
_configured = False


def configure() -> bool:
    """Read the environment (again) and turn tracing on or off; True when on."""
    global _configured
    _configured = True
    use(None)
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but tracing is off (%s): "
            "pip install 'outlast[otel]'",
            exc,
        )
        return False
    service = os.environ.get("OTEL_SERVICE_NAME", "outlast")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use(provider)
    return True


def use(provider: Any) -> None:
    """Trace through ``provider`` (an SDK ``TracerProvider``; tests give one with an
    in-memory exporter), or not at all with ``None``."""
    global _tracer, _configured
    _configured = True
    _tracer = None if provider is None else provider.get_tracer("outlast")


def _get() -> Any:
    if not _configured:
        configure()
    return _tracer


@contextlib.contextmanager
def run_span(run_id: str, thread_id: str, graph: str, attempt: int) -> Iterator[None]:
    """The current span while a run executes; node spans and log records nest under it."""
    tracer = _get()
    if tracer is None:
        yield
        return
    attributes = {
        "outlast.run_id": run_id,
        "outlast.thread_id": thread_id,
        "outlast.graph": graph,
        "outlast.attempt": attempt,
    }
    with tracer.start_as_current_span("outlast.run", attributes=attributes):
        yield


def start_node(name: str) -> Any:
    """A span for one node task, child of the current (run) span; ended by ``end_node``.
    Not made current: tasks start and end as stream parts, not as a call stack."""
    tracer = _get()
    if tracer is None:
        return None
    return tracer.start_span(f"node {name}", attributes={"langgraph.node": name})


def end_node(span: Any, error: Any = None, *, interrupted: bool = False) -> None:
    if span is None:
        return
    from opentelemetry.trace import Status, StatusCode

    if error is not None:
        span.set_status(Status(StatusCode.ERROR, str(error)[:200]))
    if interrupted:
        span.set_attribute("outlast.interrupted", True)
    span.end()


def current_trace_id() -> str | None:
    """The current trace id in hex, when tracing is on and a span is current."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
