"""Configuration, from ``OUTLAST_*`` environment variables and CLI flags: this package is
the only place that reads one (the server's ``Settings`` here, the small settings of the
parts that run without a server in ``parts.py``). Every clock has settings of its own
(the transport, the worker lease, activity leases, budgets), never folded into one
timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from outlast.config import supervisor as _supervisor
from outlast.config.parts import (
    CREDENTIAL_PREFIX,
    ClientSettings,
    FaultSettings,
    ModelSettings,
    WorkspaceSettings,
    credential_from_env,
    credential_variable,
    fault_spec,
)

_ENV = SettingsConfigDict(env_prefix="OUTLAST_", extra="ignore")
DEFAULT_CONFIG = Path("langgraph.json")


class Settings(_supervisor.SupervisorSettings):
    model_config = _ENV

    database_url: str | None = Field(
        default=None,
        description="postgresql://… for Postgres, sqlite:///path/file.db for an SQLite file; "
        "unset keeps everything in SQLite under data_dir",
    )
    data_dir: Path = Field(
        default=Path(".outlast"),
        description="the embedded store's folder; also holds secret.key, reports, outbox",
    )
    graphs_file: Path | None = Field(
        default=None,
        description="the app's langgraph.json (`--config`): its graphs, auth, routes, store; "
        "unset: ./langgraph.json if there is one. One that is named and does not exist "
        "stops the server; with no file at all and no graphs, outlast's demo graphs",
    )
    graphs: list[str] = Field(
        default_factory=list, description="extra graphs: name=module:attr or name=path.py:attr"
    )

    host: str = Field(
        default="127.0.0.1",
        description="where `serve` listens; beyond loopback, API keys are required",
    )
    port: int = Field(default=8000, description="the port `serve` listens on")
    http_keep_alive: int = Field(
        default=75,
        gt=0,
        description="seconds an idle HTTP connection stays open: longer than clients keep "
        "theirs (httpx 5 s, load balancers 60 s), so the client, not the server, closes it",
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one object per line, with run_id, thread_id, trace_id"
    )

    # Worker lease: detects dead workers, not slow operations.
    workers: int | None = Field(
        default=None,
        ge=1,
        description="processes of `serve` / `worker` (outlast/processes.py); default: the "
        "machine's cores with Postgres, 1 with the embedded store (SQLite notifies only "
        "within its process). Each has its own pool, concurrency and limits.",
    )
    worker_concurrency: int = Field(
        default=10, ge=1, description="runs one worker process executes at once"
    )
    claim_batch: int = Field(
        default=2,
        ge=1,
        description="runs taken per claim: small, so workers woken together share a burst",
    )
    eager_start: bool = Field(
        default=True,
        description="a run accepted by a process whose worker is idle and has a free slot "
        "starts there at once, claimed in the acceptance transaction; false: always queued",
    )
    worker_lease_ttl: float = Field(
        default=30.0,
        gt=0,
        description="seconds a silent worker keeps its runs; then they are requeued",
    )
    worker_heartbeat: float = Field(
        default=10.0, gt=0, description="seconds between a worker's renewals of its lease"
    )
    reaper_interval: float = Field(
        default=5.0, gt=0, description="seconds between a worker's looks for expired leases"
    )
    queue_poll: float = Field(
        default=5.0,
        gt=0,
        description="safety net only: workers are woken by NOTIFY, this bounds a lost one",
    )
    max_attempts: int = Field(
        default=3, ge=1, description="claims of a run; a worker lost on the last one fails it"
    )
    shutdown_grace: float = Field(
        default=10.0,
        ge=0,
        description="seconds a drain waits for step boundaries, then cancels nodes",
    )
    durability: Literal["sync", "async", "exit"] = Field(
        default="sync", description="LangGraph durability of a run that names none"
    )

    # Activity leases: one operation in flight (a node, a model call, a tool).
    activity_lease_ttl: float = Field(
        default=30.0,
        gt=0,
        description="seconds of an operation's silence before the supervisor looks",
    )
    activity_flush_interval: float = Field(
        default=1.0, gt=0, description="activity is written and announced at most this often"
    )

    # Mission budgets: defaults per run, the operator's hard caps, and model prices
    # (USD per million tokens, by model name) for the cost dimension.
    budget_defaults: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="a run's budget when it names none: {dimension: {soft, hard}}",
    )
    budget_caps: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="hard caps no request or tranche passes: {dimension: {soft, hard}}",
    )
    model_prices: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="USD per million tokens: {model: {input, output}}"
    )
    budget_auto_tranches: int = Field(
        default=0,
        ge=0,
        description="tranches the supervisor may grant by itself at a soft limit, each only "
        "with progress since the last checkpoint; the operator's choice, 0 = a person decides",
    )

    # Transport clock: one SSE connection.
    stream_max_seconds: float = Field(
        default=600.0, gt=0, description="a stream's longest life; the client then reconnects"
    )
    stream_keepalive: float = Field(
        default=15.0, gt=0, description="seconds between keepalive comments on a stream"
    )
    stream_token_ttl: float = Field(
        default=300.0, gt=0, le=86_400, description="how long a minted stream token opens"
    )
    langgraph_heartbeat: float = Field(
        default=5.0,
        gt=0,
        description="the LangGraph face's `: heartbeat` and /wait keepalive interval (what "
        "LangGraph's server sends; the JS SDK's idle watchdog is set from it)",
    )
    message_flush_interval: float = Field(
        default=0.1,
        ge=0,
        description="model token chunks are coalesced into one log event per interval "
        "(LangGraph-face streams of a run executing in the same process get each chunk at "
        "once)",
    )
    event_carry_window: float = Field(
        default=0.02,
        ge=0,
        description="seconds a step's events wait for the checkpoint write that carries "
        "them (Postgres); 0 = every batch is its own write",
    )

    # Waits.
    signal_lookback: float = Field(
        default=300.0, ge=0, description="a signal wakes waits registered up to this long after it"
    )
    waker_interval: float = Field(default=1.0, gt=0, description="longest nap of the waker")
    cron_interval: float = Field(default=5.0, gt=0, description="longest nap of the cron scheduler")
    probe_timeout: float = Field(
        default=30.0, gt=0, description="seconds one call of an external wait's probe may take"
    )

    # Retention of events (per run by count, overall by age).
    event_retention_count: int = Field(
        default=10_000, ge=1, description="events kept per run; older ones are pruned"
    )
    event_retention_age: float = Field(
        default=30 * 86400.0, gt=0, description="seconds an event is kept"
    )
    retention_interval: float = Field(
        default=60.0, gt=0, description="seconds between a worker's retention passes"
    )
    temporary_thread_ttl: float = Field(
        default=300.0,
        ge=0,
        description="seconds after its run ended that the thread of a stateless LangGraph "
        "run (on_completion=delete) is deleted, so a client can still read the run",
    )

    max_body_bytes: int = Field(
        default=1_000_000, ge=1024, description="a larger request body is refused (413)"
    )
    cors_origins: list[str] = Field(
        default_factory=lambda: ["*"],
        description="origins browsers may call from (Studio, Agent Chat UI, your pages)",
    )

    # Principals and limits (issue 8). Keys: "principal:key" pairs, or a file of digests.
    api_keys: str | None = Field(
        default=None,
        repr=False,
        description="principal:key pairs, comma-separated (16+ characters)",
    )
    api_keys_file: Path | None = Field(
        default=None, description="a file of key digests, made by `outlast key new`"
    )
    insecure_no_auth: bool = Field(
        default=False, description="allow listening beyond loopback without API keys"
    )
    auth_default: Literal["allow", "deny"] = Field(
        default="allow",
        description="what the app's auth.py does with an action no @auth.on handler covers: "
        "`allow` it, as LangGraph's server does, or `deny` it (403); the uncovered actions "
        "are listed at start",
    )
    max_input_bytes: int = Field(
        default=256_000, ge=64, description="a larger run input is refused (413)"
    )
    max_answer_bytes: int = Field(
        default=64_000,
        ge=64,
        description="a larger answer, resume value or signal payload is refused (413)",
    )
    max_event_bytes: int = Field(
        default=256_000, ge=1024, description="larger event payloads are stored truncated"
    )
    max_runs_in_flight: int = Field(default=1000, ge=0, description="per principal; 0 = none")
    max_streams: int = Field(default=100, ge=1, description="open SSE streams per principal")
    rate_limit: float = Field(
        default=200.0, ge=0, description="requests per second per principal; 0 = none"
    )
    result_wait_max: float = Field(
        default=60.0,
        gt=0,
        description="the longest a request waits for a run to end (`?wait=`, joins)",
    )
    pool_min_size: int = Field(
        default=1, ge=1, description="Postgres connections a process keeps open"
    )
    pool_max_size: int = Field(
        default=10, ge=1, description="Postgres connections of a process's pool, at most"
    )
    pg_dead_peer_timeout: float = Field(
        default=10.0,
        ge=2,
        description="seconds in which a Postgres connection whose network went silent is "
        "found dead (a statement fails, a listener reconnects); the database URL's own "
        "keepalives, tcp_user_timeout and connect_timeout win",
    )

    # Push notifications (runtime/deliverer.py).
    secret_keys: SecretStr | None = Field(
        default=None,
        description="Fernet keys, comma-separated, that encrypt stored secrets (webhook "
        "signing secrets, answers to auth waits); the first encrypts, all decrypt "
        "(rotation). Unset: a key made once in data_dir/secret.key (one machine; set this "
        "for several)",
    )
    compensation_attempts: int = Field(
        default=3,
        ge=1,
        le=100,
        description="calls of a compensation that fails before a person is asked "
        "(a reconciliation wait)",
    )
    compensation_timeout: float = Field(
        default=300.0,
        gt=0,
        description="seconds one call of a compensation may take; longer is a failure "
        "(retried like one)",
    )
    compensation_backoff: float = Field(
        default=0.5,
        ge=0,
        le=60,
        description="seconds before a failed compensation's second "
        "call; doubled before each one after",
    )
    credential_providers: list[str] = Field(
        default_factory=lambda: ["env"],
        description="where outlast.nodes.credential(name) looks, in order, after the run's "
        "own answers: env (OUTLAST_CREDENTIAL_<NAME>), file:PATH (a JSON object), "
        "module:attribute (a provider of your own)",
    )
    webhook_allow_private: bool = Field(
        default=False,
        description="let webhooks reach loopback, private and link-local addresses, over "
        "http too (tests, a receiver on the same network); off: only https to public ones",
    )
    webhook_timeout: float = Field(default=10.0, gt=0, description="seconds per attempt")
    webhook_retry_period: float = Field(
        default=86400.0, gt=0, description="seconds a delivery is retried before it is dead"
    )
    webhook_backoff: float = Field(
        default=2.0, gt=0, description="the first retry's delay; doubles per attempt"
    )
    webhook_backoff_max: float = Field(
        default=3600.0, gt=0, description="the longest delay between two attempts"
    )
    webhook_concurrency: int = Field(default=16, ge=1, description="deliveries at once")
    webhook_poll: float = Field(
        default=1.0, gt=0, description="longest nap of the deliverer between claims"
    )

    @model_validator(mode="after")
    def _found_config(self) -> Settings:
        """No ``langgraph.json`` named: the working directory's, when it has one (as
        ``langgraph dev`` reads it); else ``None``, no configuration at all."""
        if self.graphs_file is None and DEFAULT_CONFIG.is_file():
            self.graphs_file = DEFAULT_CONFIG
        return self

    def sqlite_paths(self) -> tuple[Path, Path]:
        """The run store and the checkpoint store, in two files: aiosqlite gives each
        connection its own thread and write lock, and a long checkpoint write kept apart
        does not block run acceptance."""
        return self.data_dir / "outlast.db", self.data_dir / "checkpoints.db"


__all__ = [
    "CREDENTIAL_PREFIX",
    "ClientSettings",
    "FaultSettings",
    "ModelSettings",
    "Settings",
    "WorkspaceSettings",
    "credential_from_env",
    "credential_variable",
    "fault_spec",
]
