"""A run handle: one run, found once for one caller and one verb, and what a face does
with it (as Temporal's ``WorkflowHandle``).

Every face (``/v1``, the LangGraph face, A2A, MCP, protocol v2) used to look a run up,
wait for it to settle, choose which wait an answer goes to and decide which
authorization action a verb needs, each in its own way. They are decided here:

- **The lookup** (``RunService.handle``): the id's grammar (a UUID; anything else is no
  run), the owner (``service/owners.py``) and the app's ``threads`` handler for the
  action the verb needs (``NEEDS``). What fails any of them is ``RunNotFound``; an
  outage is ``StoreUnavailable``, retryable, never "not found" (``errors.fault_of``).
- **Settling**: the run's states, read again at each status notification and at
  least every ``REREAD`` seconds (not every transition notifies, and a notification may
  be lost while a listener reconnects), watched before the first read so a change in
  between is never missed; ``settle(until, at_most)`` stops at the first state
  ``until`` accepts, or when the time is up.
- **Answering**: an answer that names its wait goes to it; one that does not goes to
  the one wait the run asks, and a run that asks several refuses it (``WhichWait``)
  rather than guess. A retry under the same key is recognised, and changes nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from outlast.errors import NothingToResume, RunNotFound, WhichWait
from outlast.service.standing import answerable
from outlast.store import Run, Wait
from outlast.store.hub import STATUS, wait_for
from outlast.vocabulary import RunStatus

if TYPE_CHECKING:
    from outlast.service.runs import RunService

Verb = Literal["read", "cancel", "answer", "delete"]

# The app's ``threads`` action each verb asks (LangGraph's server asks the same): a
# cancel changes the thread's run, so ``update``. An answer is looked up as a read: it
# resumes the run, and ``RunService.answer`` asks ``create_run`` itself, with the value.
NEEDS: dict[Verb, str] = {"read": "read", "cancel": "update", "answer": "read", "delete": "delete"}

# The longest a settling reader goes without reading the run again, notified or not.
REREAD = 1.0


def run_key(run_id: str) -> str:
    """A run id as the store and its notifications spell it; anything else is no run."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        raise RunNotFound(f"no run {run_id!r}") from None


@dataclass(frozen=True, slots=True)
class Now:
    """The run as it stands at one read, with its open waits."""

    run: Run
    waits: list[Wait]

    @property
    def asked(self) -> list[Wait]:
        """What the run asks a client for now (nothing unless it waits)."""
        return answerable(self.waits) if self.run.status == RunStatus.WAITING else []

    @property
    def ended(self) -> bool:
        return self.run.terminal


# When a settling reader stops: a state it accepts.
Until = Callable[[Now], bool]


def ended(now: Now) -> bool:
    return now.ended


def needs_a_client(now: Now) -> bool:
    """The run ended, or it asks a client for something: a waiting client's turn."""
    return now.ended or bool(now.asked)


def choose(run: Run, asked: list[Wait]) -> Wait:
    """The wait an answer that names none goes to: the one the run asks."""
    if not asked:
        raise NothingToResume(f"run {run.id} asks for nothing now: it is {run.status.value}")
    if len(asked) > 1:
        raise WhichWait(f"run {run.id} asks {len(asked)} things at once; name one with wait_id")
    return asked[0]


@dataclass(frozen=True, slots=True)
class RunHandle:
    """The caller's run, as found by ``RunService.handle``; ``run`` is that read."""

    runs: RunService
    run: Run
    # set by ``RunService.watching``: the run's status watch, open since before ``run``
    # was read
    watch: asyncio.Event | None = None

    @property
    def id(self) -> str:
        return self.run.id

    async def now(self) -> Now | None:
        """The run as it is now (None: it is gone, with its thread)."""
        run = await self.runs.store.get_run(self.run.id)
        return None if run is None else Now(run, await self.runs.open_waits(run))

    async def states(
        self, channel: str = STATUS, *, deadline: float | None = None
    ) -> AsyncIterator[Now]:
        """The run now, then again at each notification on ``channel`` (its status by
        default; a follower of its output watches ``EVENTS``), and at least every
        ``REREAD`` seconds; ends when the run is gone, or at ``deadline`` (the loop's
        clock) with nothing changed since the last state. The caller stops when it has
        what it waits for. A handle found by ``RunService.watching`` starts from the
        lookup's read, made inside the watch."""
        if self.watch is not None and channel == STATUS:
            first = Now(self.run, await self.runs.open_waits(self.run))
            async for now in self._states(self.watch, first, deadline):
                yield now
            return
        with self.runs.store.hub.watch(channel, self.run.id) as changed:
            async for now in self._states(changed, None, deadline):
                yield now

    async def _states(
        self, changed: asyncio.Event, now: Now | None, deadline: float | None
    ) -> AsyncIterator[Now]:
        loop = asyncio.get_running_loop()
        while True:
            if now is None:
                changed.clear()  # before the read: a change after it still wakes us
                now = await self.now()
                if now is None:
                    return
            yield now
            left = REREAD if deadline is None else min(REREAD, deadline - loop.time())
            if left <= 0:
                return
            woke = await wait_for(changed, left)
            if not woke and deadline is not None and loop.time() >= deadline:
                return  # nothing changed: what was read is what it is
            now = None

    async def settle(self, until: Until, at_most: float) -> Now | None:
        """The first state ``until`` accepts, or the run as it is after ``at_most``
        seconds (None: it is gone meanwhile)."""
        last: Now | None = None
        deadline = asyncio.get_running_loop().time() + at_most
        async for now in self.states(deadline=deadline):
            last = now
            if until(now):
                break
        return last

    async def asking(self) -> list[Wait]:
        """The open waits a client answers now."""
        now = await self.now()
        return [] if now is None else now.asked

    async def answer(
        self, value: Any, *, source: str, key: str | None, wait_id: str | None = None
    ) -> tuple[Run, bool]:
        """Answer the run, exactly once: ``(run as it is now, fresh)``. ``wait_id``
        None: the one wait it asks (``NothingToResume`` if none, ``WhichWait`` if
        several); a retry under ``key`` of an answer taken already is ``fresh`` False."""
        if wait_id is None:
            if key is not None:
                taken = await self.runs.store.list_waits(self.run.id)
                if any(w.answer_key == key for w in taken):
                    now = await self.now()
                    return (now.run if now is not None else self.run), False
            now = await self.now()
            if now is None:
                raise RunNotFound(f"no run {self.run.id!r}")
            wait_id = choose(now.run, now.asked).id
        return await self.runs.answer(self.run, wait_id, value, source=source, key=key)

    async def cancel(self, reason: str) -> Run:
        """Cancel the run (a finished one is returned as it is)."""
        return await self.runs.cancel(self.run, reason)

    async def rollback(self, reason: str) -> Run:
        """Cancel the run and undo it (``RunService.cancel`` with ``rollback_too``)."""
        return await self.runs.cancel(self.run, reason, rollback_too=True)
