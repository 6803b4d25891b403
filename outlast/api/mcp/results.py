"""An outlast run in MCP's words: the result of the tool call that started it, and the
task it is (MCP 2025-11-25 tasks).

The task id *is* the run id, so the mapping is as durable as the run: after a restart
``tasks/get`` reads the run again and nothing was kept in the process. The status is read
from the run and its open waits, never kept apart: ``queued``, ``running``, ``cancelling``
and a wait nobody answers (a timer, a provider's job) are ``working``; a run asking a
person is ``input_required``; the ends are ``completed``, ``failed`` and ``cancelled``.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from outlast.api.mcp.tools import ANSWER
from outlast.jsonable import to_jsonable
from outlast.service.standing import TaskStance, answerable, task_stance
from outlast.store import Run, Wait
from outlast.vocabulary import RunStatus

RUN_META = "outlast/run_id"  # the run behind a result, in its _meta
RELATED_TASK = "io.modelcontextprotocol/related-task"
POLL_MS = 1000


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def question(wait: Wait) -> str:
    """What a wait asks, as text (its prompt, else its object, else its kind)."""
    asked = wait.prompt if wait.prompt is not None else wait.object
    if isinstance(asked, dict) and isinstance(asked.get("question"), str):
        return str(asked["question"])
    return _text(asked if asked is not None else wait.kind)


def tool_result(run: Run, waits: list[Wait]) -> types.CallToolResult:
    """A finished run's output (or its error), or what a waiting run asks."""
    meta = {RUN_META: run.id}
    if run.status == RunStatus.COMPLETED:
        value = to_jsonable(run.result)
        structured = value if isinstance(value, dict) else {"result": value}
        return types.CallToolResult(
            content=[types.TextContent(text=_text(value))],
            structured_content=structured,
            _meta=meta,
        )
    if run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        error = run.error or {}
        why = error.get("message") or error.get("reason") or run.status.value
        return types.CallToolResult(
            content=[types.TextContent(text=f"run {run.id} {run.status.value}: {_text(why)}")],
            is_error=True,
            _meta=meta,
        )
    return waiting_result(run, answerable(waits))


def waiting_result(run: Run, asked: list[Wait]) -> types.CallToolResult:
    """A run that waits for a person: what it asks and how to answer (``outlast_answer``)."""
    questions = [
        {
            "wait_id": w.id,
            "question": question(w),
            "asks": to_jsonable(w.prompt),
            "schema": w.schema,
        }
        for w in asked
    ]
    lines = [f"run {run.id} waits for a person:"] + [f"- {q['question']}" for q in questions]
    lines.append(
        f"Answer with the {ANSWER} tool: "
        + json.dumps({"run_id": run.id, "answer": "<the answer>"})
        + (" (and wait_id, one question at a time)" if len(asked) > 1 else "")
    )
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines))],
        structured_content={"run_id": run.id, "status": "waiting", "questions": questions},
        _meta={RUN_META: run.id},
    )


STATUSES: dict[TaskStance, types.TaskStatus] = {
    "submitted": "working",
    "working": "working",
    "input": "input_required",
    "auth": "input_required",  # MCP has no state of its own for a credential
    "completed": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}


def status_of(run: Run, waits: list[Wait]) -> types.TaskStatus:
    """The run's task state (``service/standing.py``), in MCP's words."""
    return STATUSES[task_stance(run, waits)]


def task_of(run: Run, waits: list[Wait]) -> types.Task:
    status = status_of(run, waits)
    message = None
    if status == "input_required":
        message = "; ".join(question(w) for w in answerable(waits))
    elif status in ("failed", "cancelled"):
        message = _text((run.error or {}).get("message") or (run.error or {}).get("reason"))
    return types.Task(
        task_id=run.id,
        status=status,
        status_message=message,
        created_at=run.created_at.isoformat(),
        last_updated_at=run.updated_at.isoformat(),
        ttl=None,  # kept as long as the run is (retention decides, not the task)
        poll_interval=POLL_MS,
    )


def related(run_id: str) -> dict[str, Any]:
    return {RELATED_TASK: {"taskId": run_id}}
