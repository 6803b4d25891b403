"""An event is encoded to JSON once: the sink encodes it to weigh it (oversized events
become markers) and hands the text on; the store writes that text as it is."""

from __future__ import annotations

import asyncio

from outlast.runtime.sink import EventSink
from outlast.store import EventDraft, Lease, Store
from outlast.store.rows import dumps
from tests.util import new_run


async def _lease(store: Store) -> Lease:
    await store.create_run(new_run())
    (run,) = await store.claim("w1", 30, 1)
    return Lease(run.id, "w1", run.lease_epoch)


async def test_the_store_writes_the_sinks_encoding_as_it_is(store: Store) -> None:
    lease = await _lease(store)
    # an encoding that differs from the data on purpose: the store must not redo it
    await store.append(lease, [EventDraft("custom", {"a": 1}, encoded='{"a":2}')])
    events = await store.read_events(lease.run_id, 0, 100)
    assert [e.data for e in events if e.type == "custom"] == [{"a": 2}]


async def test_the_sink_hands_its_encoding_to_the_store(store: Store) -> None:
    lease = await _lease(store)
    seen: list[EventDraft] = []
    append = store.append

    async def recording(lease: Lease, batch: list[EventDraft], token: str | None = None) -> int:
        seen.extend(batch)
        return await append(lease, batch, token)

    store.append = recording  # type: ignore[method-assign]
    sink = EventSink(store, lease, on_error=lambda exc: None)
    sink.put(EventDraft("custom", {"text": "héllo", "n": [1, 2]}))
    await asyncio.wait_for(sink.flush(), 30)
    await sink.close()
    assert [d.encoded for d in seen] == [dumps({"text": "héllo", "n": [1, 2]})]
