"""Where a new run goes, and what it meets there: the one thing a face chooses about an
acceptance beyond the request itself. A plain run gets a thread of its own (or joins the
one it names, queued behind its runs); ``OnThread`` refuses a busy thread unless told to
queue; ``LangGraphRun`` handles the thread's active run by LangGraph's
``multitask_strategy`` and records the LangGraph run made with it."""

from __future__ import annotations

from dataclasses import dataclass

from outlast.store import LgRun


@dataclass(frozen=True, slots=True)
class OnThread:
    if_busy: str  # "reject" (ThreadBusy while a run of the thread is active) or "enqueue"


@dataclass(frozen=True, slots=True)
class LangGraphRun:
    draft: LgRun  # its ids are the accepted run's, set by the service
    strategy: str  # reject | interrupt | rollback | enqueue
    supersede_reason: str  # why a waiting run of the thread is cancelled as superseded
    temporary: bool = False  # a stateless run's thread, deleted after it ends


Placement = OnThread | LangGraphRun
