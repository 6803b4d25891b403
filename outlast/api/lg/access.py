"""Lookups every route of the LangGraph face shares: a thread, a LangGraph run, the graph
of a thread and its state, seen by the calling principal (another principal's thread or
run does not exist: ``404``, as on ``/v1``)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from langgraph.types import StateSnapshot

from outlast.api.context import AppContext
from outlast.errors import OutlastError, RunNotFound
from outlast.graph.factories import AccessContext
from outlast.runtime.policy import asks_for_the_runtime
from outlast.service.handle import RunHandle, Verb
from outlast.service.standing import NOT_WAITING, Standing, lg_run_status, standing
from outlast.store import LgRun, Run, Thread, Wait
from outlast.store.base import system_assistant_id
from outlast.store.lgthreads import native
from outlast.vocabulary import WaitStatus


class Conflict(OutlastError):
    status = 409
    title = "Conflict"


class BadRequest(OutlastError):
    status = 400
    title = "Bad request"


class Unprocessable(OutlastError):
    status = 422
    title = "Unprocessable request"


async def find_thread(
    ctx: AppContext,
    thread_id: str,
    action: str | None = "read",
    value: dict[str, Any] | None = None,
) -> Thread | None:
    """The caller's thread, if the app's ``threads`` handler for ``action`` (asked with
    ``value``, which it may change: the caller reads it back) lets it through: a thread
    its filter leaves out does not exist. ``action`` None: asked already. Whose thread
    it is, is the owner rule's (``service/owners.py``), asked by the thread service."""
    return await ctx.threads.find(thread_id, action, value)


async def thread_or_404(
    ctx: AppContext,
    thread_id: str,
    action: str | None = "read",
    value: dict[str, Any] | None = None,
) -> Thread:
    return await ctx.threads.get(thread_id, action, value)


def graph_id_of(ctx: AppContext, thread: Thread) -> str:
    """The graph whose channels the thread's checkpoints hold: its latest run's, else the
    one its metadata names, else the first configured (the thread service's)."""
    return ctx.threads.graph_id(thread)


@contextlib.asynccontextmanager
async def thread_graph(
    ctx: AppContext, thread: Thread, context: AccessContext
) -> AsyncIterator[Any]:
    """The thread's graph on the shared (unfenced) saver: for reading states
    (``threads.read``) and for updates a client makes between runs (``threads.update``),
    never for running. A factory gets the thread's latest run's config, so that it
    builds the graph that run ran (the thread service's)."""
    async with ctx.threads.graph(thread, context) as graph:
        yield graph


async def read_state(
    ctx: AppContext,
    thread: Thread,
    checkpoint: dict[str, Any] | None = None,
    subgraphs: bool = False,
) -> StateSnapshot:
    configurable: dict[str, Any] = {"thread_id": thread.thread_id, "checkpoint_ns": ""}
    if checkpoint:
        configurable.update({k: v for k, v in checkpoint.items() if v is not None})
        configurable["thread_id"] = thread.thread_id
    async with thread_graph(ctx, thread, "threads.read") as graph:
        state: StateSnapshot = await graph.aget_state(
            {"configurable": configurable}, subgraphs=subgraphs
        )
    return state


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
    """The caller's LangGraph run (a stretch of an outlast run, or a run made through
    ``/v1`` seen as one) on ``thread_id``, and the handle of the run behind it, found by
    the run service for ``verb`` (the app's handler asked with ``value``)."""
    missing = RunNotFound(f"Run with ID {run_id} not found")
    try:
        uuid.UUID(run_id)
    except ValueError:
        raise missing from None
    lg = await ctx.store.lg_get_run(run_id)
    try:
        handle = await ctx.runs.handle(
            lg.run_id if lg else run_id, verb, {"run_id": run_id, **(value or {})}
        )
    except RunNotFound:
        raise missing from None
    run = handle.run
    if lg is None:
        if await ctx.store.lg_runs_of_run(run.id):
            raise missing  # not a LangGraph run id
        lg = native(run, system_assistant_id(run.graph))
    if lg.deleted or (thread_id is not None and lg.thread_id != thread_id):
        raise missing
    return await found(ctx, lg, run), handle


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
