"""What a resumed run owes its log: the ``node.updated`` events an earlier attempt lost.

A task's writes and its event are two transactions (the checkpointer's and the event
sink's), and a process can die, or lose its database, between them. The checkpoint is
the truth about what ran; the log must still show every step, once. So on a resume:

- the tasks whose writes were saved against the checkpoint the run resumes from come
  back from LangGraph as cached updates; the translator logs those whose event is not
  in the log (``logged_tasks``), and skips the others;
- the tasks of the steps *before* that checkpoint, already folded into it, never come
  back: ``missing_updates`` walks back through the run's checkpoints while a step has
  tasks with no event in the log, and returns their events, oldest first, marked
  ``recovered``. The sink writes events in order, so what was lost is a suffix of the
  log: the walk stops at the first step whose events are all there.

Events of subgraph tasks, ``custom`` events and model deltas are not recovered: they
are not in the checkpoint as such (ARCHITECTURE.md, "Guarantees, and exactly where they
stop": Events).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import StateSnapshot

from outlast.jsonable import to_jsonable
from outlast.store import EventDraft, EventStore, Run
from outlast.vocabulary import EventType

# How far back a resumed run reads its log for node.updated events (its last tasks'
# are among the last events), and how many steps back it looks for lost ones.
LOOKBACK_EVENTS = 1000
LOOKBACK_STEPS = 10


async def logged_tasks(store: EventStore, run: Run) -> set[str]:
    """The tasks whose ``node.updated`` is in the tail of the run's log."""
    after = max(0, run.last_seq - LOOKBACK_EVENTS)
    events = await store.read_events(run.id, after, LOOKBACK_EVENTS)
    return {
        str(e.data["task"])
        for e in events
        if e.type == EventType.NODE_UPDATED and e.data.get("task")
    }


async def missing_updates(
    graph: Any, state: StateSnapshot, run_id: str, logged: set[str]
) -> list[EventDraft]:
    """The events of finished tasks that the resumed checkpoint folded in but the log
    lacks, oldest first."""
    found: list[list[EventDraft]] = []
    snapshot = state
    for _ in range(LOOKBACK_STEPS):
        parent: RunnableConfig | None = snapshot.parent_config
        if parent is None:
            break
        snapshot = await graph.aget_state(parent)
        if (snapshot.metadata or {}).get("run_id") != run_id:
            break  # an earlier run of the thread: not this log's
        done = [
            t
            for t in snapshot.tasks
            if t.result is not None and not t.interrupts and not t.name.startswith("__")
        ]
        lost = [t for t in done if t.id not in logged]
        if not lost:
            break
        found.append(
            [
                EventDraft(
                    EventType.NODE_UPDATED,
                    {
                        "node": t.name,
                        "ns": "",
                        "update": to_jsonable(t.result),
                        "task": t.id,
                        "recovered": True,
                    },
                )
                for t in lost
            ]
        )
    return [draft for step in reversed(found) for draft in step]
