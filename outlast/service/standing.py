"""Where a run stands, in the words of each face: the one status mapping.

outlast's own statuses (``vocabulary.RunStatus``) are finer than what a client asks: a
``waiting`` run may ask a person something (the client must act) or wait for a timer, a
provider or a signal (it goes on by itself), and a ``queued`` run may be a run accepted
with ``after_seconds`` that parked on its timer. What a run *is* for a client is derived
here, from the run and its open waits, and nowhere else, so the LangGraph face, A2A and a
bulk cancel by status cannot disagree (a bulk cancel of ``pending`` runs once missed the
delayed ones, ``running`` the ones waiting on a timer, because it mapped statuses itself).

For the LangGraph face (ARCHITECTURE.md, "The LangGraph face"):

- a run that asks a client for something (an open human, auth, budget or reconciliation
  wait) has ended its LangGraph run with ``success``, and its thread is ``interrupted``:
  that is how LangGraph's own server shows an ``interrupt()``;
- a run waiting on a timer, a provider or a signal goes on by itself: ``running``, the
  thread ``busy``; one waiting for its ``after_seconds`` is ``pending``;
- a cancelled run is ``interrupted`` with a ``cancel_reason``, and its thread ``idle``,
  never ``interrupted``: a cancel is not a pause a client could resume;
- ``queued`` is ``pending``, ``failed`` is ``error`` (the thread too, with the error).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from outlast.runtime.options import AFTER
from outlast.runtime.policy import asks_for_the_runtime
from outlast.store import Run, Thread, Wait, WaitStore
from outlast.vocabulary import ANSWERABLE_KINDS, RunStatus, WaitKind, WaitStatus

_BUSY = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.CANCELLING)

# The LangGraph statuses a bulk cancel may name, and the run statuses that can have them
# (what the store is asked for before the mapping decides).
LgActive = Literal["pending", "running", "all"]
ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.CANCELLING, RunStatus.WAITING)


@dataclass(frozen=True, slots=True)
class Standing:
    """What a run's open waits say about it (all false/empty unless it is waiting)."""

    asking: bool = False  # it waits for a client's answer
    delayed: bool = False  # accepted with ``after_seconds``, not yet due
    asked: tuple[Wait, ...] = ()  # the runtime's own open waits (in no checkpoint)


async def open_waits(store: WaitStore, run: Run) -> list[Wait]:
    """What a waiting run waits for (nothing for a run in any other status)."""
    if run.status != RunStatus.WAITING:
        return []
    return await store.list_waits(run.id, WaitStatus.OPEN)


NOT_WAITING = Standing()

# Where a run stands as a task (A2A's and MCP's tasks), before each face's words: a client
# is asked for input or for a credential, or the run goes on by itself (``working``,
# also while it waits on a timer, a provider or a signal), or it has ended.
TaskStance = Literal["submitted", "working", "input", "auth", "completed", "failed", "cancelled"]


def task_stance(run: Run, waits: Sequence[Wait]) -> TaskStance:
    if run.status == RunStatus.COMPLETED:
        return "completed"
    if run.status == RunStatus.FAILED:
        return "failed"
    if run.status == RunStatus.CANCELLED:
        return "cancelled"
    if run.status == RunStatus.QUEUED:
        return "submitted"
    asked = answerable(waits) if run.status == RunStatus.WAITING else []
    if any(w.kind == WaitKind.AUTH for w in asked):
        return "auth"
    return "input" if asked else "working"


def answerable(waits: Sequence[Wait]) -> list[Wait]:
    """The open waits a client answers (a person's, a credential's, a budget's, a
    reconciliation's); timers, providers and signals end by themselves."""
    return [w for w in waits if w.kind in ANSWERABLE_KINDS]


def standing(run: Run, open_waits: Sequence[Wait]) -> Standing:
    if run.status != RunStatus.WAITING:
        return NOT_WAITING
    return Standing(
        asking=bool(answerable(open_waits)),
        delayed=any(w.interrupt_id == AFTER for w in open_waits),
        asked=tuple(w for w in open_waits if asks_for_the_runtime(w)),
    )


def lg_run_status(run: Run, latest: bool, stands: Standing) -> str:
    """The status of a LangGraph run that is a stretch of ``run``; ``latest`` says whether
    it is the run's newest stretch (an older one ended where the run asked something)."""
    if not latest:
        return "success"
    if run.status == RunStatus.QUEUED or stands.delayed:
        return "pending"
    if run.status in (RunStatus.RUNNING, RunStatus.CANCELLING):
        return "running"
    if run.status == RunStatus.WAITING:
        return "success" if stands.asking else "running"
    if run.status == RunStatus.COMPLETED:
        return "success"
    if run.status == RunStatus.FAILED:
        return "error"
    if (run.error or {}).get("type") == "superseded":
        return "success"  # it had ended at its interrupt; new input replaced the pause
    return "interrupted"


def lg_thread_status(thread: Thread, paused_at_breakpoint: bool = False) -> str:
    status = thread.run_status
    if status is None or status == RunStatus.CANCELLED:
        return "idle"
    if status in _BUSY:
        return "busy"
    if status == RunStatus.WAITING:
        return "interrupted" if thread.asking else "busy"
    if status == RunStatus.FAILED:
        return "error"
    return "interrupted" if paused_at_breakpoint else "idle"


# The thread protocol's ``AgentStatus`` (agent-protocol, ``streaming/protocol.cddl``).
AgentStatus = Literal["started", "running", "completed", "failed", "interrupted"]


def agent_status(run: Run, stands: Standing) -> AgentStatus:
    """Where a run stands on the thread protocol: ``interrupted`` only when it asks a
    client for something (a pause the client resumes); a cancelled run ``failed``, as a
    cancel is not a pause (and ``interrupted`` would keep a client waiting to answer)."""
    if run.status == RunStatus.COMPLETED:
        return "completed"
    if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        return "failed"
    if run.status == RunStatus.WAITING and stands.asking:
        return "interrupted"
    if run.status == RunStatus.QUEUED and not run.has_history:
        return "started"
    return "running"


def lg_matches(run: Run, stands: Standing, wanted: LgActive) -> bool:
    """Whether the run, as the newest stretch of its LangGraph run, has the status a
    bulk cancel names (``all``: pending or running)."""
    status = lg_run_status(run, True, stands)
    return status == wanted or (wanted == "all" and status in ("pending", "running"))
