"""Observability: ``/metrics`` (Prometheus), JSON logs with the run they belong to, and
optional OpenTelemetry tracing.

Counters and histograms are process-global (every test and both backends add to them):
tests compare values before and after, never absolute values. The run gauges are read
from the test's own store, so those are exact.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast import logs, tracing
from outlast.cli import build_parser
from outlast.config import Settings
from outlast.graph.example import STEPS
from outlast.store import Store
from tests.harness import (
    SUPERVISOR_FAST,
    NotYet,
    Samples,
    answer,
    collect,
    eventually,
    make_settings,
    post_run,
    scrape,
    serve,
    sse_events,
    total,
    wait_result,
    wait_status,
)

MESSAGES = {"messages": [{"role": "user", "content": "hello"}]}

NAMES = [
    "outlast_runs",
    "outlast_queue_depth",
    "outlast_claim_latency_seconds",
    "outlast_step_duration_seconds",
    "outlast_activity_lease_renewals_total",
    "outlast_activity_lease_expiries_total",
    "outlast_supervisor_verdicts_total",
    "outlast_budget_checkpoints_total",
    "outlast_compensations_total",
    "outlast_sse_clients",
    "outlast_sse_replayed_events_total",
    "outlast_sse_gaps_total",
    "outlast_worker_runs_in_flight",
    "outlast_worker_runs_finished_total",
]


async def scrape_until(client: httpx.AsyncClient, check: Any) -> Samples:
    async def probe() -> Samples:
        samples = await scrape(client)
        if not check(samples):
            raise NotYet(samples)
        return samples

    return await eventually(probe, what="the metrics check")


async def test_metrics_during_and_after_a_run(store: Store) -> None:
    async with serve(store) as srv:
        text = (await srv.client.get("/metrics")).text
        for name in NAMES:
            assert f"# TYPE {name} " in text, name
        before = await scrape(srv.client)
        assert total(before, "outlast_runs") == 0 and total(before, "outlast_queue_depth") == 0
        run = await post_run(
            srv.client, input=MESSAGES, config={"configurable": {"step_delay": 0.1}}
        )
        # the row says running as soon as the claim commits; the worker counts the run in
        # flight a moment later, when the claim's answer reaches it
        await scrape_until(
            srv.client,
            lambda s: (
                total(s, "outlast_runs", status="running") == 1
                and total(s, "outlast_worker_runs_in_flight") >= 1
            ),
        )
        await wait_result(srv.client, run["id"])
        after = await scrape_until(
            srv.client,
            lambda s: (
                total(s, "outlast_worker_runs_in_flight")
                == total(before, "outlast_worker_runs_in_flight")
            ),
        )
        assert total(after, "outlast_runs", status="completed") == 1
        assert total(after, "outlast_runs", status="running") == 0
        assert total(after, "outlast_queue_depth") == 0

        def delta(name: str, **labels: str) -> float:
            return total(after, name, **labels) - total(before, name, **labels)

        assert delta("outlast_worker_runs_finished_total", outcome="completed") == 1
        assert delta("outlast_claim_latency_seconds_count") == 1
        for step in STEPS:
            assert delta("outlast_step_duration_seconds_count", node=step) == 1, step
        assert delta("outlast_step_duration_seconds_sum") >= 0.1 * len(STEPS)


async def test_queue_depth_counts_runs_no_worker_takes(store: Store) -> None:
    async with serve(store, with_worker=False) as srv:
        for _ in range(3):
            await post_run(srv.client, input=MESSAGES)
        samples = await scrape(srv.client)
        assert total(samples, "outlast_queue_depth") == 3
        assert total(samples, "outlast_runs", status="queued") == 3
        assert total(samples, "outlast_runs", status="cancelled") == 0  # zero, not missing


async def test_sse_clients_replays_and_gaps(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client, input=MESSAGES, config={"configurable": {"step_delay": 0.3}}
        )
        before = await scrape(srv.client)
        clients = total(before, "outlast_sse_clients")
        async with srv.client.stream("GET", f"/v1/runs/{run['id']}/events") as response:
            # connected and reading (not `break`: leaving the iterator closes the response)
            reading = sse_events(response)
            await anext(reading)
            during = await scrape(srv.client)
            assert total(during, "outlast_sse_clients") == clients + 1
            await reading.aclose()
        # the server notices the closed connection on its own time
        await scrape_until(srv.client, lambda s: total(s, "outlast_sse_clients") == clients)
        await wait_result(srv.client, run["id"])

        # a reconnect after the end: everything it gets was already in the log
        replayed = total(await scrape(srv.client), "outlast_sse_replayed_events_total")
        missed = await collect(srv.client, run["id"], last_event_id="4")
        assert len(missed) > 3
        after = await scrape(srv.client)
        assert total(after, "outlast_sse_replayed_events_total") - replayed == len(missed)
        assert total(after, "outlast_sse_clients") == clients

        gaps = total(after, "outlast_sse_gaps_total")
        await store.prune_events(run["id"], 6)
        events = await collect(srv.client, run["id"], after=2)
        assert events[0].event == "gap"
        assert total(await scrape(srv.client), "outlast_sse_gaps_total") - gaps == 1


async def test_live_events_are_not_counted_as_replayed(store: Store) -> None:
    async with serve(store) as srv:
        run = await post_run(
            srv.client, input=MESSAGES, config={"configurable": {"step_delay": 0.2}}
        )
        await wait_status(srv.client, run["id"], "running")
        before = total(await scrape(srv.client), "outlast_sse_replayed_events_total")
        connected = (await srv.client.get(f"/v1/runs/{run['id']}")).json()["last_seq"]
        events = await collect(srv.client, run["id"])
        replayed = total(await scrape(srv.client), "outlast_sse_replayed_events_total") - before
        # the snapshot's last_seq was read just before the stream's own read: a few events
        # may land in between, never fewer than were logged before the connect
        assert connected <= replayed < len(events)


async def test_supervisor_verdicts_and_lease_expiries(store: Store, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    async with serve(store, make_settings(**SUPERVISOR_FAST)) as srv:
        before = await scrape(srv.client)
        run = await post_run(
            srv.client, graph="quiet", config={"configurable": {"gate": str(gate)}}
        )
        snap = await wait_status(srv.client, run["id"], "waiting")
        after = await scrape(srv.client)

        def delta(name: str, **labels: str) -> float:
            return total(after, name, **labels) - total(before, name, **labels)

        # the ladder of test_supervisor: (1, renew), (4, renew), (4, escalate)
        assert delta("outlast_supervisor_verdicts_total", tier="1", verdict="renew") >= 1
        # (>= rather than ==: the counters are per process, and under load the ladder
        # may look at the lease one more time before the run parks)
        assert delta("outlast_supervisor_verdicts_total", tier="4", verdict="escalate") >= 1
        assert delta("outlast_activity_lease_expiries_total") >= 3
        assert delta("outlast_activity_lease_renewals_total", source="progress") >= 2
        assert delta("outlast_activity_lease_renewals_total", source="supervisor") >= 2
        assert delta("outlast_worker_runs_finished_total", outcome="waiting") >= 1
        assert (await answer(srv, run["id"], snap["wait"]["id"], "close")).status_code == 202
        await wait_result(srv.client, run["id"])
        # claimed twice: at acceptance, and again once the answer queued it
        claims = total(await scrape(srv.client), "outlast_claim_latency_seconds_count")
        assert claims - total(before, "outlast_claim_latency_seconds_count") == 2


async def test_budget_checkpoints_by_level(store: Store) -> None:
    async with serve(store) as srv:
        before = await scrape(srv.client)
        run = await post_run(
            srv.client,
            graph="looper",
            input={},
            budget={"steps": {"hard": 5}},
            config={"configurable": {"rounds": 20}, "recursion_limit": 100},
        )
        final = await wait_result(srv.client, run["id"])
        assert final["partial"] is True
        after = await scrape(srv.client)
        name = "outlast_budget_checkpoints_total"
        assert (
            total(after, name, level="hard", dimension="steps")
            - total(before, name, level="hard", dimension="steps")
            == 1
        )


# -- logs --------------------------------------------------------------------------------


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """Records of the ``outlast`` loggers, formatted as the JSON format writes them."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("outlast")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        yield out
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_json_logs_carry_the_run(store: Store, json_lines: io.StringIO) -> None:
    tracing.use(None)
    async with serve(store) as srv:
        run = await post_run(srv.client, graph="boom", input={})
        final = await wait_result(srv.client, run["id"])
        assert final["status"] == "failed"
    records = _records(json_lines)
    failed = [r for r in records if "the tool exploded" in r["message"]]
    assert failed, records
    record = failed[0]
    assert set(record) >= {"time", "level", "logger", "message"}
    assert record["level"] == "WARNING" and record["logger"] == "outlast.runtime.endings"
    assert record["run_id"] == run["id"] and record["thread_id"] == run["thread_id"]
    assert record["trace_id"] == run["id"]  # no tracing: the run id stands in
    # outside a run, no run fields
    logging.getLogger("outlast.test").warning("idle")
    assert "run_id" not in _records(json_lines)[-1]


def test_log_format_option_and_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    args = build_parser().parse_args(["serve", "--log-format", "json"])
    assert args.log_format == "json"
    assert build_parser().parse_args(["worker"]).log_format is None  # then the setting
    monkeypatch.setenv("OUTLAST_LOG_FORMAT", "json")
    assert Settings().log_format == "json"
    monkeypatch.setenv("OUTLAST_LOG_FORMAT", "xml")
    with pytest.raises(ValueError):
        Settings()
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "boom %s", ("!",), None)
    assert json.loads(logs.JsonFormatter().format(record))["message"] == "boom !"


# -- tracing -----------------------------------------------------------------------------


def test_tracing_is_off_without_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        assert tracing.configure() is False
        assert tracing.start_node("n") is None and tracing.current_trace_id() is None
        with tracing.run_span("r", "t", "g", 1):
            assert tracing.current_trace_id() is None
        # with an endpoint but without the SDK: still off, and nothing breaks
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
        assert tracing.configure() is False
    finally:
        tracing.use(None)


async def test_spans_per_run_and_per_node(store: Store, json_lines: io.StringIO) -> None:
    pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        async with serve(store) as srv:
            ok = await post_run(srv.client, input=MESSAGES)
            await wait_result(srv.client, ok["id"])
            bad = await post_run(srv.client, graph="boom", input={})
            await wait_result(srv.client, bad["id"])
    finally:
        tracing.use(None)
    spans = exporter.get_finished_spans()
    runs = {s.attributes["outlast.run_id"]: s for s in spans if s.name == "outlast.run"}
    assert set(runs) == {ok["id"], bad["id"]}
    run_span = runs[ok["id"]]
    nodes = [s for s in spans if s.parent and s.parent.span_id == run_span.context.span_id]
    assert [s.name for s in sorted(nodes, key=lambda s: s.start_time or 0)] == [
        f"node {step}" for step in STEPS
    ]
    assert all(s.context.trace_id == run_span.context.trace_id for s in nodes)
    failed_node = next(
        s for s in spans if s.parent and s.parent.span_id == runs[bad["id"]].context.span_id
    )
    assert failed_node.status.status_code == StatusCode.ERROR
    # the log record of the failure names the run's trace
    record = next(r for r in _records(json_lines) if "the tool exploded" in r["message"])
    assert record["trace_id"] == format(runs[bad["id"]].context.trace_id, "032x")
    assert record["run_id"] == bad["id"]
