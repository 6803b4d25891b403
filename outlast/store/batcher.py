"""One writer task that commits what callers submit, in batches that form by themselves.

Why a writer and not a timer: a batch is whatever is pending when the writer is free.
A write submitted while the writer is idle goes at once, alone; writes submitted while a
batch is in flight go together in the next one. So batches grow exactly when the
database is the bottleneck, and one caller alone waits for nothing but its own write
(bench/ab.py measures both ends). One batch is in flight at a time, in submission order,
so the writes of any one caller keep their order.

A caller's ``submit`` returns once ``commit`` returned for a batch holding its item (the
item is durable), or raises what failed it. When a batch fails with an error that
``isolate`` says belongs to one item and undid the whole batch (a refused fence, a
constraint), each item is committed again alone, so that one bad item fails alone and
its batch-mates are not punished for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from outlast.cancelling import cancel_and_wait

T = TypeVar("T")

# A batch's size: large enough that fifty runs' steps share one transaction, small
# enough that a batch (and a failed batch's second pass) holds the writer briefly.
MAX_BATCH = 64


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a write: ``many`` runs it once per parameter set."""

    sql: Any
    params: Any
    many: bool = False


@dataclass(eq=False, slots=True)
class _Entry(Generic[T]):
    item: T
    done: asyncio.Future[None]


class Batcher(Generic[T]):
    def __init__(
        self,
        commit: Callable[[list[T]], Awaitable[None]],
        *,
        isolate: Callable[[BaseException], bool],
        failure: Callable[[T, BaseException], BaseException],
        name: str,
    ) -> None:
        """``commit(items)`` makes them all durable or raises; ``isolate(error)``: the
        error undid the batch and may be one item's own; ``failure(item, error)``: the
        error that item's caller gets."""
        self._commit = commit
        self._isolate = isolate
        self._failure = failure
        self._name = name
        self._pending: list[_Entry[T]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0  # transactions committed, for the bench and the tests
        self.items = 0
        self.largest = 0

    async def submit(self, item: T) -> None:
        entry = _Entry(item, asyncio.get_running_loop().create_future())
        self._pending.append(entry)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._loop(), name=self._name)
        try:
            await asyncio.shield(entry.done)
        except asyncio.CancelledError:
            # Not sent yet: it never will be. Already in a batch: that batch goes on,
            # and its outcome is nobody's to hear.
            with contextlib.suppress(ValueError):
                self._pending.remove(entry)
            entry.done.add_done_callback(_heard)
            raise

    async def close(self) -> None:
        """Stop the writer: the batch in flight and every write still waiting are
        cancelled, so no caller waits for a writer that is gone."""
        if self._task is not None:
            await cancel_and_wait(self._task)
        pending, self._pending = self._pending, []
        for entry in pending:
            entry.done.cancel()

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
                await self._run(batch)

    async def _run(self, batch: list[_Entry[T]]) -> None:
        try:
            await self._commit([e.item for e in batch])
        except asyncio.CancelledError:
            for entry in batch:
                entry.done.cancel()
            raise
        except BaseException as exc:
            if len(batch) > 1 and self._isolate(exc):
                for entry in batch:  # one of them took the others with it: each alone
                    await self._run([entry])
                return
            for entry in batch:
                if not entry.done.done():
                    entry.done.set_exception(self._failure(entry.item, exc))
            return
        self.batches += 1
        self.items += len(batch)
        self.largest = max(self.largest, len(batch))
        for entry in batch:
            if not entry.done.done():
                entry.done.set_result(None)


def _heard(future: asyncio.Future[None]) -> None:
    """Retrieve an abandoned write's outcome, so asyncio does not report it as unheard."""
    if not future.cancelled():
        future.exception()
