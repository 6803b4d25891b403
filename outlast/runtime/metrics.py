"""Prometheus metrics of one process (``GET /metrics``).

One registry per process, apart from ``prometheus_client``'s global default, so the
exposition holds outlast's metrics (and the process collector) and nothing a library
registered on its own. Counters and histograms are per process: Prometheus sums them
across processes. The run gauges are read from the database at scrape time (see
``refresh_runs``), so every process reports the same, cluster-wide numbers.

Each metric says below which question it answers.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from outlast.vocabulary import DeliveryStatus, RunStatus

# `*_created` series (one per counter and histogram child) double the series count for a
# timestamp Prometheus can infer from resets; process-wide, as prometheus_client allows.
disable_created_metrics()  # type: ignore[no-untyped-call]
REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)

CONTENT_TYPE = CONTENT_TYPE_LATEST

# Queue waits range from milliseconds (an idle worker) to hours (a saturated cluster).
_QUEUE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
# Nodes range from a dict merge to a long tool call or model stream.
_STEP_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)

RUNS = Gauge(
    "outlast_runs",
    "Runs in the database by status, read at scrape time. Why: the one picture of the "
    "system (how much is queued, running, parked on waits, finished) that every process "
    "reports alike.",
    ["status"],
    registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "outlast_queue_depth",
    "Runs waiting for a worker (status queued), read at scrape time. Why: the signal to "
    "add workers; it grows when claims fall behind acceptance.",
    registry=REGISTRY,
)
CLAIM_LATENCY = Histogram(
    "outlast_claim_latency_seconds",
    "Seconds from a run becoming queued (accepted, answered, released, requeued) to a "
    "worker claiming it, on database time. Why: queue depth says how much waits, this says "
    "how long a user waits before anything happens.",
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
EAGER_STARTS = Counter(
    "outlast_worker_eager_starts",
    "Runs started by the worker of the process that accepted them, claimed in the "
    "acceptance transaction (no queue, no NOTIFY, no claim statement). Why: how much of "
    "the load skips the queue; their claim latency is recorded as the time to commit.",
    registry=REGISTRY,
)
WEBHOOK_ATTEMPTS = Counter(
    "outlast_webhook_attempts",
    "Attempts at delivering a push notification, by outcome: delivered (2xx), retry "
    "(failed, tried again later), dead (failed for the whole retry period). Why: a "
    "receiver that is down shows as retries before anyone misses a notification.",
    ["outcome"],
    registry=REGISTRY,
)
WEBHOOK_LATENCY = Histogram(
    "outlast_webhook_latency_seconds",
    "Seconds from the event to its delivery's 2xx, by this process's clock against the "
    "event's timestamp. Why: how late a system that waits on notifications hears of a run.",
    buckets=_QUEUE_BUCKETS,
    registry=REGISTRY,
)
CRON_TICKS = Counter(
    "outlast_cron_ticks",
    "Cron ticks this process's scheduler handled, by outcome: fired (its run accepted), "
    "refused (the run could not be made, for good: the tick is skipped), retried (the "
    "database or a limit said not now: fired again later, into the same run). Why: a cron "
    "that stopped making runs shows as refusals before anyone misses its report.",
    ["outcome"],
    registry=REGISTRY,
)
OUTBOX = Gauge(
    "outlast_webhook_deliveries",
    "Deliveries in the outbox by status, read at scrape time. Why: pending that grows is "
    "a receiver that does not keep up; dead ones wait for an operator.",
    ["status"],
    registry=REGISTRY,
)
STEP_DURATION = Histogram(
    "outlast_step_duration_seconds",
    "Seconds a node task ran, from its start to its end in LangGraph's tasks stream, by "
    "node name. Why: which node makes runs slow, before anyone opens a trace.",
    ["node"],
    buckets=_STEP_BUCKETS,
    registry=REGISTRY,
)
ACTIVITY_RENEWALS = Counter(
    "outlast_activity_lease_renewals",
    "Activity lease renewals by source: model (a streamed token), heartbeat, progress "
    "(from a node), supervisor (a renewal it granted). Why: how lively nodes are, and how "
    "often the supervisor extends silence rather than a node proving life.",
    ["source"],
    registry=REGISTRY,
)
ACTIVITY_EXPIRIES = Counter(
    "outlast_activity_lease_expiries",
    "Activity leases that ran out and woke the supervisor (not counted with the "
    "supervisor off: nothing watches them then). Why: silent operations; each one costs a "
    "supervisor look and may stop a node.",
    registry=REGISTRY,
)
SUPERVISOR_VERDICTS = Counter(
    "outlast_supervisor_verdicts",
    "Supervisor verdicts (supervisor.verdict events) by ladder tier and verdict. Why: how "
    "far up the ladder decisions climb (tier 3 costs model calls) and how often runs are "
    "closed, escalated to a person, or reminded.",
    ["tier", "verdict"],
    registry=REGISTRY,
)
SUPERVISOR_MODEL_CALLS = Counter(
    "outlast_supervisor_model_calls",
    "Questions to the supervisor's model by outcome: called (it answered), cached (the "
    "same question was answered lately), over_budget (the run's or the process's calls "
    "were spent: the evidence decided), failed (the call raised). Why: what the semantic "
    "tier costs, and whether its budgets are set where it is needed.",
    ["outcome"],
    registry=REGISTRY,
)
SUPERVISOR_MODEL_TOKENS = Counter(
    "outlast_supervisor_model_tokens",
    "Tokens the supervisor's model used, input or output, as its usage metadata reports "
    "them. Why: the semantic tier's size, priced or not.",
    ["kind"],
    registry=REGISTRY,
)
SUPERVISOR_MODEL_COST = Counter(
    "outlast_supervisor_model_cost_usd",
    "USD the supervisor's model cost, from its tokens and OUTLAST_MODEL_PRICES (unpriced "
    "models add nothing). Why: the price of the semantic tier against the pages it saves.",
    registry=REGISTRY,
)
BUDGET_CHECKPOINTS = Counter(
    "outlast_budget_checkpoints",
    "Budget checkpoints (budget.checkpoint events) by level (soft: the run asks; hard: it "
    "closes with its best result) and dimension. Why: whether limits are set where runs "
    "actually need them.",
    ["level", "dimension"],
    registry=REGISTRY,
)
COMPENSATIONS = Counter(
    "outlast_compensations",
    "Calls of compensations (runtime/compensation.py) by outcome: done, failed (raised; "
    "retried), asked (kept failing: a person is asked), by_hand (a person said it was "
    "undone). Why: a compensation that fails leaves the world half undone; asked is an "
    "operator's queue.",
    ["outcome"],
    registry=REGISTRY,
)
SSE_CLIENTS = Gauge(
    "outlast_sse_clients",
    "Event streams open in this process. Why: connections hold memory and a database "
    "read per wake-up; a leak shows here first.",
    registry=REGISTRY,
)
SSE_REPLAYED = Counter(
    "outlast_sse_replayed_events",
    "Events a stream sent that were already in the log when it connected: those with "
    "seq <= the run's last_seq as read at connect time (a fresh stream replays the whole "
    "log so far, a Last-Event-ID reconnect only what it missed). Events appended after the "
    "connect are live and not counted. Why: the cost of catching up after disconnects.",
    registry=REGISTRY,
)
SSE_GAPS = Counter(
    "outlast_sse_gaps",
    "Gap events sent: a client's cursor predated what retention kept. Why: retention is "
    "too short for how long clients stay away.",
    registry=REGISTRY,
)
WORKER_IN_FLIGHT = Gauge(
    "outlast_worker_runs_in_flight",
    "Runs this process's workers are executing now. Why: against worker_concurrency, "
    "whether workers are saturated.",
    registry=REGISTRY,
)
WORKER_LOOP_RESTARTS = Counter(
    "outlast_worker_loop_restarts",
    "Restarts of a worker's own loop (claim, heartbeat, reaper, waker, retention) after it "
    "raised, by loop. Why: a loop that fails silently lets leases expire under a live "
    "worker; any rise here is a bug or a sick dependency, before the worker gives up.",
    ["loop"],
    registry=REGISTRY,
)
WORKER_FINISHED = Counter(
    "outlast_worker_runs_finished",
    "Executions a worker ended, by outcome: completed, failed, cancelled (terminal); "
    "waiting or queued (parked on a wait); cancelling (cancelled as it parked, owing "
    "compensations or a rollback that a worker does next); released (back to the queue: "
    "drain, tranche, reminder); lease_lost, store_failed, crashed. A run that waits "
    "executes more than once. Why: the rate and the mix of how runs end.",
    ["outcome"],
    registry=REGISTRY,
)


def supervisor_model_call(outcome: str, cost: Mapping[str, float]) -> None:
    """One question to the supervisor's model; ``cost`` as the verdict event holds it."""
    SUPERVISOR_MODEL_CALLS.labels(outcome=outcome).inc()
    for kind in ("input", "output"):
        SUPERVISOR_MODEL_TOKENS.labels(kind=kind).inc(cost.get(f"{kind}_tokens", 0))
    SUPERVISOR_MODEL_COST.inc(cost.get("usd", 0.0))


def refresh_runs(counts: Mapping[str, int]) -> None:
    """Set the run gauges from ``count_runs_by_status``; a status with no run reads 0 (a
    series that vanishes would look like missing data, not like zero)."""
    for status in RunStatus:
        RUNS.labels(status=status.value).set(counts.get(status.value, 0))
    QUEUE_DEPTH.set(counts.get(RunStatus.QUEUED.value, 0))


def refresh_outbox(counts: Mapping[str, int]) -> None:
    """Set the outbox gauge from ``count_deliveries`` (every status, zeros included)."""
    for status in DeliveryStatus:
        OUTBOX.labels(status=status.value).set(counts.get(status.value, 0))


def exposition() -> bytes:
    return generate_latest(REGISTRY)
