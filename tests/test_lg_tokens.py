"""A run stream's model chunks, each once: the translator's numbered deltas and live
chunks read by ``api.lg.tokens`` in every order a stream can meet them, cut anywhere and
rejoined with the last id, two messages interleaved (parallel nodes), flushes anywhere."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from typing import Any, cast

from langchain_core.messages import AIMessageChunk
from sse_starlette import ServerSentEvent

from outlast.api.lg.tokens import Tokens, live_part, seq_part
from outlast.api.lg.wire import Wire
from outlast.runtime import live
from outlast.runtime.sink import EventSink
from outlast.runtime.translate import Translator
from outlast.store import Event, EventDraft, Lease


class _Log:
    """A sink whose puts are stored at once, numbered."""

    settled = True

    def __init__(self) -> None:
        self.events: list[Event] = []

    @property
    def last_seq(self) -> int:
        return len(self.events)

    def put(self, draft: EventDraft) -> None:
        now = dt.datetime.now(dt.UTC)
        self.events.append(Event("r", len(self.events) + 1, draft.type, draft.data, now))


def _wire(modes: set[str]) -> Wire:
    return Wire("r", "t", "g", "a", modes, subgraphs=False)


def _said(frames: list[ServerSentEvent]) -> dict[str, str]:
    out: dict[str, str] = defaultdict(str)
    for frame in frames:
        if frame.event == "messages":
            chunk = json.loads(str(frame.data))[0]
            out[chunk["id"]] += chunk["content"]
    return dict(out)


def _tokens(k: int) -> list[tuple[str, str]]:
    """Two messages' chunks, interleaved as parallel nodes make them."""
    rng = random.Random(k)
    a = [("a", f"a{i} ") for i in range(8)]
    b = [("b", f"b{i} ") for i in range(5)]
    out = []
    while a or b:
        source = a if (a and (not b or rng.random() < 0.6)) else b
        out.append(source.pop(0))
    return out


async def _session(k: int) -> tuple[list[ServerSentEvent], list[Event], str]:
    """One live stream of a run with the translator in this process: chunks and log
    events met in a random order; returns its frames, the whole log and the epoch's id."""
    rng = random.Random(k)
    log = _Log()
    translator = Translator(cast(EventSink, log), 3600, None, Lease("r", "w", 7))
    wire = _wire({"messages-tuple"})
    frames: list[ServerSentEvent] = []
    read = 0
    with live.follow("r") as (follower, snap):
        assert snap is not None and not snap.pending
        tokens = Tokens(wire, 0, None)
        tokens.joined(snap)
        for message_id, text in _tokens(k):
            chunk = AIMessageChunk(content=text, id=message_id)
            translator.feed({"type": "messages", "ns": (), "data": (chunk, {})})
            if rng.random() < 0.3:
                translator.flush_messages()
            while rng.random() < 0.5 and (read < len(log.events) or follower.chunks):
                if follower.chunks and (read == len(log.events) or rng.random() < 0.5):
                    frames += tokens.live(follower.take())
                else:
                    frames += tokens.event(log.events[read])
                    read += 1
        translator.flush_messages()
        frames += tokens.live(follower.take())
        for event in log.events[read:]:
            frames += tokens.event(event)
    translator.close()
    return frames, log.events, "r"


def _whole(events: list[Event]) -> dict[str, str]:
    out: dict[str, str] = defaultdict(str)
    for event in events:
        out[event.data["id"]] += event.data["content"]
    return dict(out)


async def test_live_and_logged_chunks_reach_the_client_once_in_order() -> None:
    for k in range(40):
        frames, events, _ = await _session(k)
        assert (
            _said(frames)
            == _whole(events)
            == {
                "a": "".join(f"a{i} " for i in range(8)),
                "b": "".join(f"b{i} " for i in range(5)),
            }
        ), k
        assert any("." in str(f.id) for f in frames), "some went live"


async def test_a_rejoin_from_any_frame_gets_the_rest_once() -> None:
    for k in range(40):
        frames, events, _ = await _session(k)
        for cut in range(len(frames)):
            last = str(frames[cut].id)
            tokens = Tokens(_wire({"messages-tuple"}), int(seq_part(last)), live_part(last))
            rest = [f for e in events if e.seq > int(seq_part(last)) for f in tokens.event(e)]
            before, after = _said(frames[: cut + 1]), _said(rest)
            joined = {m: before.get(m, "") + after.get(m, "") for m in ("a", "b")}
            assert joined == _whole(events), (k, cut, last)


async def test_the_legacy_mode_goes_on_from_what_the_client_had() -> None:
    frames, events, _ = await _session(3)
    wire = _wire({"messages"})
    live_frames = [f for f in frames if f.event == "messages"]
    last = str(live_frames[2].id)
    seq, resume = int(seq_part(last)), live_part(last)
    assert resume is not None
    tokens = Tokens(wire, seq, resume)
    for event in events:
        if event.seq <= seq:
            wire.prime(event)
    rest = [f for e in events if e.seq > seq for f in tokens.event(e)]
    partial: dict[str, Any] = {}
    for frame in rest:
        if frame.event == "messages/partial":
            message = json.loads(str(frame.data))[0]
            partial[message["id"]] = message["content"]
    assert partial == _whole(events)


async def test_a_legacy_rejoin_knows_the_unflushed_chunks_the_client_had() -> None:
    """Chunks 2 and 3 went live to the client, which was cut before they were flushed;
    its rejoin's ``messages/partial`` goes on from all it had, chunk 4 included."""
    log = _Log()
    translator = Translator(cast(EventSink, log), 3600, None, Lease("r", "w", 7))

    def say(n: int) -> None:
        chunk = AIMessageChunk(content=f"c{n} ", id="m")
        translator.feed({"type": "messages", "ns": (), "data": (chunk, {})})

    with live.follow("r") as (first, snap):
        assert snap is not None
        tokens = Tokens(_wire({"messages"}), 0, None)
        tokens.joined(snap)
        for n in (0, 1):
            say(n)
        frames = tokens.live(first.take())
        translator.flush_messages()
        frames += tokens.event(log.events[0])
        for n in (2, 3):
            say(n)
        frames += tokens.live(first.take())
    last = str(frames[-1].id)
    assert last == "1.7.3"
    say(4)  # made while the client is away
    wire = _wire({"messages"})
    wire.prime(log.events[0])
    with live.follow("r") as (_, snap):
        assert snap is not None
        again = Tokens(wire, int(seq_part(last)), live_part(last))
        again.joined(snap)
        rest = again.live([])
    translator.close()
    (partial,) = [json.loads(str(f.data))[0] for f in rest if f.event == "messages/partial"]
    assert partial["content"] == "c0 c1 c2 c3 c4 "
