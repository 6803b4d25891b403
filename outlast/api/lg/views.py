"""outlast's records as LangGraph's clients read them: threads, runs, states. Their
statuses come from the one status mapping, the run service's (``service/standing.py``).
"""

from __future__ import annotations

from typing import Any

from langgraph.types import StateSnapshot

from outlast.api.lgshared import interrupt_json
from outlast.jsonable import to_jsonable
from outlast.runtime.waits import wait_interrupt
from outlast.service.standing import lg_thread_status
from outlast.store import LgRun, Run, Thread, Wait


def error_of(run_error: dict[str, Any] | None) -> dict[str, Any] | None:
    if not run_error:
        return None
    return {
        "error": str(run_error.get("type", "Error")),
        "message": str(run_error.get("message", run_error.get("reason", ""))),
    }


def thread_json(
    thread: Thread, state: StateSnapshot | None, asked: list[Wait] | None = None
) -> dict[str, Any]:
    """``asked``: the runtime's own open waits of the thread's run (they are in no task)."""
    asked = asked or []
    paused = bool(state is not None and state.next and not state.interrupts and not asked)
    interrupts: dict[str, list[dict[str, Any]]] = {}
    if state is not None and thread.asking:
        for task in state.tasks:
            if task.interrupts:
                interrupts[task.id] = [
                    interrupt_json(i, with_schema=False) for i in task.interrupts
                ]
    for wait in asked:
        shown = wait_interrupt(wait)
        del shown["response_schema"]
        interrupts[wait.interrupt_id] = [shown]
    status = lg_thread_status(thread, paused)
    has_state = state is not None and bool(state.created_at)
    values = to_jsonable(state.values) if state is not None and has_state else None
    body: dict[str, Any] = {
        "thread_id": thread.thread_id,
        "created_at": thread.created_at.isoformat(),
        "updated_at": thread.updated_at.isoformat(),
        "state_updated_at": (state.created_at if state is not None else None)
        or thread.updated_at.isoformat(),
        "metadata": thread.metadata,
        "status": status,
        "config": {"configurable": {}},
        "values": values,
        "error": error_of(thread.run_error) if status == "error" else None,
        "interrupts": interrupts,
    }
    if not has_state and thread.run_id is None:
        # a thread nothing has run on yet, as LangGraph's server shows one: no config,
        # no error or interrupts keys (they come with its first run's state)
        body["config"] = {}
        del body["error"], body["interrupts"]
    return body


def run_json(lg: LgRun, run: Run, status: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "run_id": lg.id,
        "thread_id": lg.thread_id,
        "assistant_id": lg.assistant_id,
        "metadata": lg.metadata,
        "status": status,
        "kwargs": lg.kwargs,
        "multitask_strategy": lg.multitask_strategy,
        "created_at": lg.created_at.isoformat(),
        "updated_at": run.updated_at.isoformat(),
        # outlast's own run behind it (several LangGraph runs after resumes)
        "outlast_run_id": run.id,
    }
    if status == "interrupted":
        body["cancel_reason"] = (run.error or {}).get("reason", "cancelled")
    return body
