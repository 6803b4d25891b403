"""The one Server-Sent Events parser on the client side (outlast/client/sse.py): the
terminal client, the demo's follower, the tests and the benchmarks read streams with it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from outlast.client.sse import Frame, Frames, frames, parse

WIRE = """retry: 3000

: keepalive

id: 6
event: gap
data: {"seq": 6, "type": "gap", "time": "t", "run_id": "r", "data": {"oldest_available": 7}}

event: snapshot
data: {"seq": null, "type": "snapshot", "time": "t", "run_id": "r",
data:  "data": {"status": "running"}}

id: 7
event: run.completed
data: {"seq": 7, "type": "run.completed", "time": "t", "run_id": "r", "data": {}}

"""


async def _lines(text: str) -> AsyncIterator[str]:
    for line in text.splitlines():
        yield line


async def test_each_frame_has_the_id_it_carried_and_its_data_lines_joined() -> None:
    got = [frame async for frame in frames(_lines(WIRE))]
    assert got[0] == Frame(retry=3000)  # the hint alone is a frame: the stream opened
    assert [(f.event, f.id) for f in got[1:]] == [
        ("gap", "6"),
        ("snapshot", None),  # not the gap's id, as EventSource would say
        ("run.completed", "7"),
    ]
    assert json.loads(got[2].data or "")["data"] == {"status": "running"}


async def test_the_run_s_events_come_from_their_envelopes() -> None:
    events = [event async for event in parse(_lines(WIRE))]
    assert [(e.type, e.seq) for e in events] == [
        ("gap", 6),
        ("snapshot", None),
        ("run.completed", 7),
    ]
    assert events[-1].terminal and events[0].data == {"oldest_available": 7}


def test_a_frame_is_complete_only_at_its_blank_line() -> None:
    reader = Frames()
    assert reader.feed("id: 1") is None and reader.feed("data: {}") is None
    assert reader.feed("") == Frame(data="{}", id="1")
    assert reader.feed("") is None  # nothing since: no frame, and the id is not kept
    assert reader.feed("data:no space") is None and reader.feed("") == Frame(data="no space")
