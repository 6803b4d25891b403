"""The event sink of one run: ordered, batched, fenced appends.

Events are put synchronously (order is the order of ``put``) and written by one
background task. While a write is in flight new events accumulate and go out together
in the next one, so an idle run pays one round trip per event and a busy run batches
itself, with no timer in the way. A fenced-off write (``LeaseLost``) stops the sink and
tells the execution, which stops the graph: the run belongs to someone else now.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable

from outlast.errors import LeaseLost
from outlast.store import EventDraft, Lease, Store

log = logging.getLogger(__name__)

_RETRIES = 5


class SinkClosed(Exception):
    pass


class EventSink:
    def __init__(
        self,
        store: Store,
        lease: Lease,
        on_error: Callable[[BaseException], None],
        max_bytes: int = 256_000,
    ) -> None:
        self._max_bytes = max_bytes
        self._store = store
        self._lease = lease
        self._on_error = on_error
        self._buffer: list[EventDraft] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.error: BaseException | None = None
        self.last_seq = 0
        self._task = asyncio.create_task(self._loop(), name=f"outlast-sink-{lease.run_id}")

    def put(self, draft: EventDraft) -> None:
        if self.error is not None:
            raise SinkClosed(str(self.error)) from self.error
        self._buffer.append(_bounded(draft, self._max_bytes))
        self._idle.clear()
        self._wake.set()

    async def flush(self) -> None:
        """Wait until everything put so far is stored (or the sink failed)."""
        await self._idle.wait()
        if self.error is not None:
            raise self.error

    async def close(self) -> None:
        with contextlib.suppress(BaseException):
            await self.flush()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._buffer:
                batch, self._buffer = self._buffer, []
                try:
                    self.last_seq = await self._write(batch)
                except Exception as exc:
                    self.error = exc
                    self._idle.set()
                    self._on_error(exc)
                    return
            self._idle.set()

    async def _write(self, batch: list[EventDraft]) -> int:
        delay = 0.05
        for attempt in range(_RETRIES):
            try:
                return await self._store.append(self._lease, batch)
            except LeaseLost:
                raise
            except Exception as exc:
                # A failed statement wrote nothing (one statement, one transaction), so
                # the same batch can be retried without duplicating seqs.
                if attempt == _RETRIES - 1:
                    raise
                log.warning("event append for %s failed (%s); retrying", self._lease.run_id, exc)
                await asyncio.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")


def _bounded(draft: EventDraft, max_bytes: int) -> EventDraft:
    """An event too large for the log (a node returning a huge state) is kept as a
    marker with its size and a preview: every client pays for every event, again on each
    replay, and the full value is in the checkpoint anyway."""
    raw = json.dumps(draft.data, default=str, ensure_ascii=False)
    if len(raw.encode()) <= max_bytes:
        return draft
    preview = raw[: min(2000, max_bytes // 4)]
    marker = {"truncated": True, "bytes": len(raw.encode()), "preview": preview}
    for key in ("node", "ns", "key", "tool", "status"):
        if key in draft.data:
            marker[key] = draft.data[key]
    return EventDraft(draft.type, marker)
