"""Who may touch a thread, and every run on it: decided here once, for every face and verb.

A thread's owner is the principal on its row (``outlast_threads.principal``): whoever made
it, by ``POST /threads``, its first run on any face (``/v1``, the LangGraph face, protocol
v2, A2A's ``contextId``, MCP's ``outlast/thread_id``), ``threads.copy`` or a cron. A run
always has a thread, and is seen through it.

- **Without an app's** ``auth.py`` (API keys, or none), principals are tenants: a thread
  and its runs exist only for their owner. Another principal's thread is not found, and a
  run on it is refused as unavailable, never said to be someone's.
- **With** ``auth.py``, the app's ``@auth.on.threads`` handlers are the authority, as on
  LangGraph's server: a thread exists for a caller when the handler for the verb admits
  its metadata, whoever made it (an organisation's users sharing threads, say); what the
  handler filters out does not exist.

Whatever a face checked, the run insert holds the same line in its own statement: it
names the owner it expects (``NewRun.thread_owner``) and refuses another
(``ThreadUnavailable``), so a check forgotten above cannot attach a run to another
owner's thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from outlast.errors import ThreadUnavailable
from outlast.service.authz import Authz
from outlast.store import Run, Store, Thread


def unavailable(thread_id: str) -> ThreadUnavailable:
    return ThreadUnavailable(f"thread_id {thread_id!r} cannot be used; choose another")


@dataclass(frozen=True, slots=True)
class Owners:
    """The owner rule, for one caller."""

    store: Store
    principal: str
    authz: Authz

    @property
    def scope(self) -> str | None:
        """The principal a lookup or a listing of threads, runs, assistants or crons is
        limited to: the caller; under ``auth.py``, None (every principal's, and the
        handlers filter)."""
        return None if self.authz.shared else self.principal

    def owns(self, owner: str) -> bool:
        """Whether a record ``owner`` made is the caller's to see (under ``auth.py``,
        the handlers decide instead: every record passes here)."""
        return self.authz.shared or owner == self.principal

    async def thread(
        self, thread_id: str, action: str | None = "read", value: dict[str, Any] | None = None
    ) -> Thread | None:
        """The thread, if the caller may ``action`` it: its owner's, or one the app's
        ``threads`` handler for ``action`` (asked with ``value``, which it may change: the
        caller reads it back) admits. ``action`` None: the handler was asked already."""
        found = await self.store.lg_threads(thread_id=thread_id)
        if not found or not self.owns(found[0].principal):
            return None
        if action is not None:
            request = value if value is not None else {}
            request.setdefault("thread_id", thread_id)
            if not await self.authz.admits("threads", action, request, found[0].metadata):
                return None
        return found[0]

    async def run(
        self, run: Run, action: str = "read", value: dict[str, Any] | None = None
    ) -> bool:
        """Whether the caller may ``action`` ``run``: as its thread, for the caller's own
        run and, under ``auth.py``, for whoever the handler admits to the thread."""
        if not self.owns(run.principal):
            return False
        if not self.authz.active and run.principal == self.principal:
            return True
        asked = {"run_id": run.id, **(value or {})}
        return await self.thread(run.thread_id, action, asked) is not None

    async def for_new_run(self, thread_id: str) -> str:
        """The owner a new run's insert must find on ``thread_id`` (``NewRun.thread_owner``):
        the caller for a thread that does not exist yet, or the owner of one the caller
        may run on; ``ThreadUnavailable`` for any other."""
        found = await self.store.lg_threads(thread_id=thread_id)
        if not found:
            return self.principal
        if not self.owns(found[0].principal):
            raise unavailable(thread_id)
        return found[0].principal
