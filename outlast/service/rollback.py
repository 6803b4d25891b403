"""Putting a thread back where it was before a run (LangGraph's ``action=rollback``).

Rollback undoes by going forward (ARCHITECTURE.md): once the run has stopped writing, a
copy of the newest checkpoint it did not write becomes the thread's head, pending writes
and all, or the thread is emptied when the run wrote every checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from outlast.runtime.options import NO_CHECKPOINT, before_run, restore_as_head

if TYPE_CHECKING:
    from outlast.service.runs import RunService


async def undo(service: RunService, run_id: str) -> None:
    """Undo ``run_id`` once it has stopped; a run that does not stop within
    ``OUTLAST_RESULT_WAIT_MAX`` is left as it is."""
    run = await service.settled(run_id, service.settings.result_wait_max)
    if run is None or not run.terminal:
        return
    saver = service.store.checkpointer()
    graph = service.registry.for_run(run.graph, saver)
    config: Any = {"configurable": {"thread_id": run.thread_id}}
    before = await before_run(graph, config, run.id)
    if before == NO_CHECKPOINT:
        await saver.adelete_thread(run.thread_id)
    elif before is not None:
        await restore_as_head(graph, saver, run.thread_id, before)
