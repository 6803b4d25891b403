"""Lookups every route of the LangGraph face shares: a thread, a LangGraph run, the graph
of a thread and its state, seen by the calling principal (another principal's thread or
run does not exist: ``404``, as on ``/v1``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from outlast.api.context import AppContext
from outlast.errors import OutlastError
from outlast.runtime.policy import asks_for_the_runtime
from outlast.service.handle import RunHandle, Verb
from outlast.service.standing import NOT_WAITING, Standing, lg_run_status, standing
from outlast.store import LgRun, Run, Thread, Wait
from outlast.vocabulary import WaitStatus


class Conflict(OutlastError):
    status = 409
    title = "Conflict"


@dataclass(frozen=True, slots=True)
class Found:
    """A LangGraph run and the outlast run it is a stretch of."""

    lg: LgRun
    run: Run
    latest: bool  # the outlast run's newest stretch
    stands: Standing = NOT_WAITING  # what the run's open waits say (the run service's)

    @property
    def asking(self) -> bool:
        return self.stands.asking

    @property
    def delayed(self) -> bool:
        return self.stands.delayed

    @property
    def asked(self) -> tuple[Wait, ...]:
        return self.stands.asked

    @property
    def status(self) -> str:
        """The LangGraph run's status (the one status mapping)."""
        return lg_run_status(self.run, self.latest, self.stands)


async def lg_handle_or_404(
    ctx: AppContext,
    thread_id: str | None,
    run_id: str,
    verb: Verb = "read",
    value: dict[str, Any] | None = None,
) -> tuple[Found, RunHandle]:
    """The caller's LangGraph run on ``thread_id`` as the face reads it, and the handle of
    the run behind it, found by the run service for ``verb`` (``RunService.lg_handle``)."""
    lg, handle = await ctx.runs.lg_handle(thread_id, run_id, verb, value)
    return await found(ctx, lg, handle.run), handle


async def lg_run_or_404(
    ctx: AppContext,
    thread_id: str | None,
    run_id: str,
    verb: Verb = "read",
    value: dict[str, Any] | None = None,
) -> Found:
    return (await lg_handle_or_404(ctx, thread_id, run_id, verb, value))[0]


async def found(ctx: AppContext, lg: LgRun, run: Run) -> Found:
    stretches = await ctx.store.lg_runs_of_run(run.id)
    waits = await ctx.runs.open_waits(run)
    return found_of(lg, run, stretches[-1].id if stretches else None, waits)


def found_of(lg: LgRun, run: Run, last_stretch: str | None, open_waits: list[Wait]) -> Found:
    """What ``found`` derives, from what a listing reads once for its whole page: the id
    of the run's last stretch (None for a run made through ``/v1``) and its open waits."""
    latest = last_stretch is None or last_stretch == lg.id
    return Found(lg, run, latest, standing(run, open_waits))


async def asked_of(ctx: AppContext, thread: Thread) -> list[Wait]:
    """The runtime's own open waits of the thread's run: what its interrupts do not show."""
    if not thread.asking or thread.run_id is None:
        return []
    waits = await ctx.store.list_waits(thread.run_id, WaitStatus.OPEN)
    return [w for w in waits if asks_for_the_runtime(w)]
