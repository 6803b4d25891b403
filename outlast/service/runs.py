"""The run service: a run's business, once, behind every face.

A face (``/v1``, the LangGraph face, A2A, and the next ones) translates its wire format
into these calls and their answers back into its own; it decides nothing about a run.
Accepting, answering, resuming, signalling, cancelling and rolling back are decided here,
with the checks each needs (sizes, limits, the principal's threads, a wait's schema), so
a request means the same through every door. Errors are ``OutlastError``s with the status
each face shapes its own way (``api/problems.py``; A2A's JSON-RPC errors).

The service is bound to one caller (``principal``): a run of another principal does not
exist for it (``RunNotFound``), so existence never leaks through a status code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from outlast import faults
from outlast.config import Settings
from outlast.errors import NothingToResume, RunActive, RunNotFound, ThreadNotFound, WaitNotOpen
from outlast.graph.registry import GraphRegistry
from outlast.runtime import eager
from outlast.runtime.accept import RunRequest, new_run
from outlast.runtime.worker import Worker
from outlast.service.admission import admit, check_size, completed
from outlast.service.answers import prepared
from outlast.service.authz import NOBODY, Authz, configurable_of, matches
from outlast.service.handle import NEEDS, RunHandle, Verb, run_key
from outlast.service.owners import Owners
from outlast.service.placement import LangGraphRun, OnThread, Placement
from outlast.service.standing import (
    ACTIVE,
    LgActive,
    Standing,
    answerable,
    lg_matches,
    open_waits,
    standing,
)
from outlast.store import LgRun, ListCursor, NewRun, Run, Store, Wait
from outlast.store.base import system_assistant_id
from outlast.store.hub import STATUS
from outlast.store.lgthreads import native
from outlast.store.outbox import NewWebhook
from outlast.vocabulary import RunStatus

# The webhooks a new run is made with, as a function of its id (a face's per-run
# webhook names the run it reports on, and the id exists only once it is accepted).
Hooks = Callable[[str], Sequence[NewWebhook]]


@dataclass(frozen=True, slots=True)
class Accepted:
    run: Run
    created: bool  # False: an idempotent replay, which starts nothing
    lg: LgRun | None = None  # the LangGraph run made with it, for that face's placement


@dataclass(frozen=True, slots=True)
class Page:
    """A page of runs as a face lists them: ``last`` is the run an older page starts
    after (None: this is the last page), whether or not it was kept."""

    runs: list[Run]
    waits: dict[str, list[Wait]]
    last: Run | None

    def of(self, run: Run) -> list[Wait]:
        return self.waits.get(run.id, [])


@dataclass(frozen=True, slots=True)
class RunService:
    store: Store
    registry: GraphRegistry
    settings: Settings
    worker: Worker | None
    principal: str = ""
    authz: Authz = NOBODY  # the app's @auth.on handlers, for this caller

    @property
    def owners(self) -> Owners:
        """Who may touch which thread and run, for this caller (the one owner rule)."""
        return Owners(self.store, self.principal, self.authz)

    # -- reading ---------------------------------------------------------------------

    async def handle(
        self, run_id: str, verb: Verb = "read", value: dict[str, Any] | None = None
    ) -> RunHandle:
        """The caller's run for ``verb`` (``service/handle.py``), or ``RunNotFound``: also
        for another principal's, and for one on a thread the app's ``threads`` handler
        filters out for the action the verb needs (asked with ``value``)."""
        key = run_key(run_id)
        run = await self.store.get_run(key)
        if run is None or not await self.owners.run(run, NEEDS[verb], value):
            raise RunNotFound(f"no run {run_id!r}")
        return RunHandle(self, run)

    @contextlib.asynccontextmanager
    async def watching(
        self, run_id: str, verb: Verb = "read", value: dict[str, Any] | None = None
    ) -> AsyncIterator[RunHandle]:
        """``handle``, found inside a watch of the run's status that its ``states`` and
        ``settle`` go on from: a wait that sees no change reads the run once."""
        with self.store.hub.watch(STATUS, run_key(run_id)) as changed:
            handle = await self.handle(run_id, verb, value)
            yield dataclasses.replace(handle, watch=changed)

    async def lg_handle(
        self,
        thread_id: str | None,
        run_id: str,
        verb: Verb = "read",
        value: dict[str, Any] | None = None,
    ) -> tuple[LgRun, RunHandle]:
        """A LangGraph run of the caller's on ``thread_id`` (None: any), and the handle of
        the outlast run behind it: a stretch names its run; a run made on another face
        is seen as one LangGraph run of the graph's own assistant. ``RunNotFound`` for
        anything else (the same message as LangGraph's server)."""
        missing = RunNotFound(f"Run with ID {run_id} not found")
        try:
            uuid.UUID(run_id)
        except ValueError:
            raise missing from None
        lg = await self.store.lg_get_run(run_id)
        try:
            handle = await self.handle(
                lg.run_id if lg else run_id, verb, {"run_id": run_id, **(value or {})}
            )
        except RunNotFound:
            raise missing from None
        run = handle.run
        if lg is None:
            if await self.store.lg_runs_of_run(run.id):
                raise missing  # not a LangGraph run id
            lg = native(run, system_assistant_id(run.graph))
        if lg.deleted or (thread_id is not None and lg.thread_id != thread_id):
            raise missing
        return lg, handle

    async def get(self, run_id: str, verb: Verb = "read") -> Run:
        """The caller's run, as ``handle`` finds it."""
        return (await self.handle(run_id, verb)).run

    async def page(
        self,
        *,
        thread_id: str | None = None,
        status: RunStatus | None = None,
        limit: int = 50,
        before: ListCursor | None = None,
        keep: Callable[[Run], bool] = lambda run: True,
        action: str | None = "search",
    ) -> Page:
        """A page of the caller's runs, newest first (on a thread, everyone's the app's
        ``auth.py`` shares), those the ``threads`` handler for ``action`` admits (None:
        a thread the caller was admitted to already), with their open waits read for
        the whole page at once. ``keep``: a face's own choice (its graph, its mark)."""
        who = self.owners.scope if thread_id is not None else self.principal
        runs = await self.store.list_runs(
            principal=who, thread_id=thread_id, status=status, limit=limit + 1, before=before
        )
        more = len(runs) > limit
        runs = runs[:limit]
        last = runs[-1] if runs else None
        kept = [
            r
            for r in runs
            if keep(r) and (action is None or await self.admits(r.thread_id, action, {}))
        ]
        waiting = [r.id for r in kept if r.status == RunStatus.WAITING]
        waits = await self.store.open_waits(waiting) if waiting else {}
        return Page(kept, waits, last if more else None)

    async def admits(self, thread_id: str, action: str, value: dict[str, Any]) -> bool:
        """Whether the app's ``threads`` handler lets the caller ``action`` the thread
        (its filter against the thread's metadata; a thread with no row passes only
        an empty filter)."""
        if not self.authz.active:
            return True
        wanted = await self.authz.filter("threads", action, {"thread_id": thread_id, **value})
        if not wanted:
            return True
        found = await self.store.lg_threads(thread_id=thread_id)
        return bool(found) and matches(found[0].metadata, wanted)

    async def authorize_run(self, thread_id: str | None, value: dict[str, Any]) -> dict[str, Any]:
        """``threads.create_run`` (a new run, or a resume): the app's handler may stamp
        ``value["metadata"]``, the metadata returned, to store with the run (and on the
        thread it makes); an existing thread its filter leaves out is not found."""
        value = {**value, "thread_id": thread_id, "metadata": dict(value.get("metadata") or {})}
        wanted = await self.authz.check("threads", "create_run", value)
        if wanted and thread_id is not None:
            found = await self.store.lg_threads(thread_id=thread_id)
            mine = bool(found) and self.owners.owns(found[0].principal)
            if mine and not matches(found[0].metadata, wanted):
                raise ThreadNotFound(f"Thread with ID {thread_id} not found")
        return dict(value.get("metadata") or {})

    async def open_waits(self, run: Run) -> list[Wait]:
        """What a waiting run waits for (nothing for a run in any other status)."""
        return await open_waits(self.store, run)

    async def standing(self, run: Run) -> Standing:
        return standing(run, await self.open_waits(run))

    async def asking(self, run: Run) -> list[Wait]:
        """The open waits of ``run`` that a client answers now."""
        return answerable(await self.open_waits(run))

    # -- accepting -------------------------------------------------------------------

    async def accept(
        self,
        request: RunRequest,
        *,
        key: str | None,
        placement: Placement | None = None,
        hooks: Hooks | None = None,
    ) -> Accepted:
        """Accept a run: its identity, checked and written in one transaction before any
        work starts (and started at once by this process's worker when it has a slot).
        With ``key``, the same request again returns the same run (``created`` False);
        the same key with another request is refused (``IdempotencyKeyReused``)."""
        if self.authz.active and not isinstance(placement, LangGraphRun):
            # a LangGraph run start asks before it looks at the thread (service/launch.py)
            value = {"metadata": request.metadata, "kwargs": {"config": request.config}}
            stamped = await self.authorize_run(request.thread_id, value)
            request = dataclasses.replace(request, metadata=stamped)
        new = new_run(
            completed(request, self.settings, self.registry),
            graphs=self.registry.names,
            max_attempts=self.settings.max_attempts,
            idempotency_key=key,
            principal=self.principal,
        )
        if hooks is not None:
            new = dataclasses.replace(new, webhooks=tuple(hooks(new.id)))
        if self.authz.user is not None:
            new = _for_user(new, self.authz)
        # checked here so a face answers clearly; the insert refuses again, in its statement
        owner = await self.owners.for_new_run(new.thread_id)
        new = dataclasses.replace(new, thread_owner=owner)
        await admit(self.store, self.settings, self.principal, key)
        if isinstance(placement, LangGraphRun):
            lg = dataclasses.replace(
                placement.draft, id=new.id, run_id=new.id, thread_id=new.thread_id
            )
            create = functools.partial(
                self.store.lg_create_run,
                lg=lg,
                strategy=placement.strategy,
                supersede_reason=placement.supersede_reason,
                temporary=placement.temporary,
            )
            made, run, created = await eager.accept(
                self.worker, new, create, lambda r: r[1] if r[2] else None
            )
            return Accepted(run, created, made)
        if isinstance(placement, OnThread):
            on_thread = functools.partial(self.store.create_thread_run, if_busy=placement.if_busy)
            run, created = await eager.accept(self.worker, new, on_thread, eager.first_created)
        else:
            run, created = await eager.accept(
                self.worker, new, self.store.create_run, eager.first_created
            )
        return Accepted(run, created)

    # -- answering -------------------------------------------------------------------

    async def answer(
        self, run: Run, wait_id: str, value: Any, *, source: str, key: str | None
    ) -> tuple[Run, bool]:
        """Answer one wait of ``run``: ``(run as it is now, fresh)``; ``fresh`` is False
        for a retry of an answer already taken under the same ``key``. A second answer
        is refused (``WaitNotOpen``): exactly one of N concurrent answers resumes. An
        answer resumes the run, so the app's ``threads.create_run`` handler is asked, as
        LangGraph's server asks it of a resume (a LangGraph resume asks it in
        ``service/launch.py``)."""
        if self.authz.active:
            resume = {"command": {"resume": {wait_id: value}}, "config": run.config}
            await self.authorize_run(run.thread_id, {"run_id": run.id, "kwargs": resume})
        wait = await self.store.get_wait(run.id, wait_id)
        value = prepared(self.settings, wait, value)
        _, fresh = await self.store.answer(run.id, wait.id, value, source, key)
        return await self.get(run.id), fresh

    async def to_resume(self, thread_id: str, *, strict: bool) -> tuple[Run, list[Wait]] | None:
        """The thread's run that asks for something, and what it asks. ``None`` when
        nothing is pending on a thread whose run has ended (a client may then run with a
        resume value, as LangGraph's server allows), unless ``strict``. A run still
        going is refused (``NothingToResume``): its interrupt was resumed already, by a
        concurrent resume or another face, and a second answer never resumes twice."""
        latest = await self.store.latest_run(thread_id)
        waits = await self.asking(latest) if latest is not None else []
        if latest is not None and waits:
            return latest, waits
        if strict:
            raise NothingToResume(f"Thread {thread_id} has no pending interrupt to resume")
        if latest is not None and not latest.terminal:
            raise NothingToResume(
                f"Thread {thread_id} has no pending interrupt: its run {latest.id} is "
                f"{latest.status.value}"
            )
        return None

    async def resume(
        self,
        run: Run,
        answers: dict[str, Any],
        lg: LgRun,
        hook: NewWebhook | None = None,
        *,
        update: Any = None,
        goto: Any = None,
    ) -> tuple[LgRun, Run]:
        """Answer several waits of ``run`` at once (wait id → value; every answer lands or
        none) and open the LangGraph run ``lg`` that continues its log. ``update`` and
        ``goto`` (LangGraph's ``Command``) are stored with the answers, in their
        transaction, and applied with them in the step that resumes. ``hook``, made
        before the answers (the run may end as soon as it is answered), is removed again
        when they are refused."""
        waits = {w.id: w for w in await self.store.list_waits(run.id)}
        stored: dict[str, Any] = {}
        for wait_id, value in answers.items():
            if wait_id not in waits:
                raise WaitNotOpen(f"run {run.id} has no wait {wait_id}")
            stored[wait_id] = prepared(self.settings, waits[wait_id], value, "the resume value")
        made = None
        if hook is not None:
            made, _ = await self.store.create_webhook(
                dataclasses.replace(hook, run_id=run.id, principal=self.principal)
            )
        try:
            with_ = {k: v for k, v in (("update", update), ("goto", goto)) if v is not None}
            resumed, _ = await self.store.lg_resume(run.id, stored, lg, with_ or None)
        except BaseException:
            if made is not None:
                await self.store.delete_webhook(made.id, self.principal)
            raise
        return resumed, await self.get(run.id)

    async def signal(self, key: str, payload: Any) -> list[str]:
        """Wake every run of the caller waiting on event ``key``; the ids woken."""
        check_size(payload, self.settings.max_answer_bytes, "the payload", "max_answer_bytes")
        return await self.store.signal(key, payload, self.principal)

    # -- cancelling ------------------------------------------------------------------

    async def cancel(self, run: Run, reason: str, *, rollback_too: bool = False) -> Run:
        """Cancel ``run`` (a finished run is returned as it is). ``rollback_too``: the run
        is also undone: gone for LangGraph's clients at once, its thread put back where it
        was by the worker that ends it (asked in the cancel's transaction, so it is owed
        whatever happens to this process; ``Store.request_cancel``). A finished run is
        only hidden (ARCHITECTURE.md, "Rollback undoes by going forward")."""
        if run.terminal and not rollback_too:
            return run
        cancelled = await self.store.request_cancel(run.id, reason, rollback=rollback_too)
        faults.fault_point(faults.AFTER_CANCEL)
        return cancelled or run

    async def forget(self, run: Run, *, still_its_stretch: bool = True) -> None:
        """Remove ``run`` from the LangGraph face (its runs 404 there from now on). An
        active run is refused (``RunActive``): forgetting it would leave its work going
        on unseen; cancel it first. ``still_its_stretch`` False: the stretch asked for
        ended at an interrupt, and forgetting it forgets the run however it stands."""
        active = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.CANCELLING)
        if still_its_stretch and run.status in active:
            raise RunActive(f"Run {run.id} is {run.status.value}; cancel it first")
        await self.store.lg_delete_runs_of(run.id)

    async def cancel_where(self, wanted: LgActive, reason: str, *, rollback_too: bool) -> int:
        """Cancel every run of the caller whose LangGraph status is ``wanted`` (by the one
        status mapping: a run delayed by ``after_seconds`` is pending, one waiting on a
        timer is running). Returns how many were cancelled."""
        runs: list[Run] = []
        for status in ACTIVE:
            runs += await self.store.list_runs(
                principal=self.principal, thread_id=None, status=status, limit=10_000, before=None
            )
        waiting = [r.id for r in runs if r.status == RunStatus.WAITING]
        waits = await self.store.open_waits(waiting) if waiting else {}
        chosen = [r for r in runs if lg_matches(r, standing(r, waits.get(r.id, [])), wanted)]
        chosen = [r for r in chosen if await self.admits(r.thread_id, NEEDS["cancel"], {})]
        for run in chosen:
            await self.cancel(run, reason, rollback_too=rollback_too)
        return len(chosen)


def _for_user(new: NewRun, authz: Authz) -> NewRun:
    """The user in the run's config, where LangGraph's server puts it (after the
    fingerprint: a retry by the same user is the same request), and the run's metadata
    on the thread it makes (where the app's handler stamped an owner)."""
    assert authz.user is not None
    configurable = {**(new.config.get("configurable") or {}), **configurable_of(authz.user)}
    return dataclasses.replace(
        new,
        config={**new.config, "configurable": configurable},
        thread_metadata={**new.metadata},
    )
