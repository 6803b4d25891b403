"""What an execution can end in, and why it stopped: the vocabulary shared by the
execution and the worker (kept apart so neither module grows past reading size)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig

from outlast.store import (
    ActivityStore,
    EffectStore,
    EventDraft,
    EventStore,
    ItemStore,
    LifecycleStore,
    Run,
    RunStatus,
    RunStore,
    WaitSpec,
    WaitStore,
)
from outlast.store.outage import transient

SHUTDOWN = "shutdown"
SUPERVISOR = "supervisor"
CANCEL = "cancel"
STORE_FAILED = "store_failed"
# the detail of the Outcome of an execution its store failed under (runtime/giveback.py)
STORE_FAILED_DETAIL = "store failed"
LEASE_LOST = "lease_lost"
# When several reasons arrive, the strongest wins: a lost lease forbids any write, a
# failing store cannot take one, a cancel outranks a drain.
_PRIORITY = {SHUTDOWN: 0, SUPERVISOR: 1, CANCEL: 2, STORE_FAILED: 3, LEASE_LOST: 4}
# an error of the database, not of the graph: one definition, the store's
store_failure = transient


@dataclass(frozen=True, slots=True)
class Outcome:
    # None: this execution did not end the run (released to the queue, or it stopped
    # writing: lease lost, store failing)
    status: RunStatus | None
    detail: str = ""


def run_config(run: Run) -> RunnableConfig:
    """The LangGraph config of a run: the client's config, on the run's thread, tagged
    with the run id (which LangGraph copies into every checkpoint's metadata)."""
    config: dict[str, Any] = dict(run.config)
    configurable = dict(config.get("configurable") or {})
    configurable["thread_id"] = run.thread_id
    config["configurable"] = configurable
    config["metadata"] = {**(config.get("metadata") or {}), "run_id": run.id, "graph_id": run.graph}
    return config  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class BudgetStop:
    """A budget limit stopped the graph at a step boundary; ``values`` is the best result."""

    breach: dict[str, Any]
    values: Any


@dataclass(frozen=True, slots=True)
class Parked:
    """The graph stopped at interrupts; the run waits without holding anything."""

    specs: list[WaitSpec]
    # the kept stream parts that show the interrupts, appended with the waits
    events: tuple[EventDraft, ...] = ()


class ExecutionStore(
    LifecycleStore, RunStore, EventStore, WaitStore, ActivityStore, EffectStore, ItemStore, Protocol
):
    """What executing one run uses: all but threads, the outbox, secrets, assistants and
    LangGraph's records (a run's execution never touches them)."""
