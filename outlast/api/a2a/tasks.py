"""An outlast run as an A2A task: the same thing in A2A's words.

The task id is the run id and the context id its thread. The state is read from the run
and its open waits, never kept apart (there is no second copy to drift): ``queued`` is
``submitted``, ``running`` and ``cancelling`` are ``working``, a run waiting on a person
is ``input-required`` (the wait's prompt is the status message), on a credential
``auth-required``; a run waiting on a timer or a provider's job is still ``working``
(nobody is asked anything); the three ends are ``completed`` (the result is the
``result`` artifact), ``failed`` (the error is the status message) and ``canceled``.
"""

from __future__ import annotations

import json
from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus

from outlast.jsonable import to_jsonable
from outlast.service.standing import answerable, task_stance
from outlast.store import Run, Wait
from outlast.vocabulary import RunStatus

STATES = {
    "submitted": TaskState.TASK_STATE_SUBMITTED,
    "working": TaskState.TASK_STATE_WORKING,
    "input": TaskState.TASK_STATE_INPUT_REQUIRED,
    "auth": TaskState.TASK_STATE_AUTH_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}


def state_of(run: Run, waits: list[Wait]) -> int:
    """The run's task state (``service/standing.py``), in A2A's words."""
    return STATES[task_stance(run, waits)]


def _agent(run: Run, *parts: Part) -> Message:
    return Message(
        role=Role.ROLE_AGENT,
        message_id=f"{run.id}:{run.last_seq}",
        task_id=run.id,
        context_id=run.thread_id,
        parts=list(parts),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)


def status_message(run: Run, waits: list[Wait]) -> Message | None:
    asked = answerable(waits)
    if run.status == RunStatus.WAITING and asked:
        return _agent(run, *(new_text_part(_text(w.prompt or w.object or w.kind)) for w in asked))
    if run.status == RunStatus.FAILED and run.error:
        return _agent(run, new_text_part(_text(run.error.get("message") or run.error)))
    if run.status == RunStatus.CANCELLED:
        return _agent(run, new_text_part(_text((run.error or {}).get("reason", "cancelled"))))
    return None


def task_of(run: Run, waits: list[Wait]) -> Task:
    status = TaskStatus(state=state_of(run, waits))  # type: ignore[arg-type]
    status.timestamp.FromDatetime(run.updated_at)
    message = status_message(run, waits)
    if message is not None:
        status.message.CopyFrom(message)
    task = Task(id=run.id, context_id=run.thread_id, status=status)
    if run.status == RunStatus.COMPLETED and run.result is not None:
        task.artifacts.append(result_artifact(run))
    task.metadata.update({"outlast_status": run.status.value, "graph": run.graph})
    return task


def result_artifact(run: Run) -> Artifact:
    value = to_jsonable(run.result)
    part = new_data_part(value) if isinstance(value, dict) else new_text_part(_text(value))
    return Artifact(artifact_id="result", name="result", parts=[part])
