"""Model tokens handed to the streams of this process as they are produced.

The durable log gets a run's token chunks coalesced (``message.delta``, one per message
per flush interval), and every stream reads the log; a client watching tokens would see
them a flush interval late. When the worker executing a run is in the same process as a
stream following it (``outlast serve`` with its embedded worker), the run's
``Translator`` also hands each chunk to that run's followers here, at once. A run
executed by another process (``outlast worker``) has no producer here: its streams get
tokens through the log, as before.

Chunks are numbered per execution (``epoch``: the lease's, unique per claim of the run)
in the order the model produced them, and each ``message.delta`` records the numbers of
the chunks it holds, so a stream can tell which chunks its client already got live and
send each exactly once, also to a client that rejoins (see ``api.lg.tokens``).

Nothing is built when nobody follows: the producer asks ``followers`` first.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Chunk:
    """One model token chunk, as produced: chunk ``n`` of execution ``epoch``."""

    epoch: int
    n: int
    message_id: str
    node: str | None
    ns: str
    text: str
    tool_call_chunks: list[Any] = field(default_factory=list)
    last: bool = False  # the model's last chunk of the message (``chunk_position``)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The producer's state when a follower joined: chunks up to ``flushed`` were put on
    the run's event sink, all of them stored at or before seq ``written_upto`` (None:
    some are not stored yet); ``pending`` were produced since and are in no event yet."""

    epoch: int
    flushed: int
    written_upto: int | None
    pending: list[Chunk]


class Producer(Protocol):
    def snapshot(self, pending: bool = True) -> Snapshot: ...


class Follower:
    """One stream's queue of live chunks; ``notify`` wakes the stream."""

    __slots__ = ("chunks", "notify")

    def __init__(self) -> None:
        self.chunks: deque[Chunk] = deque()
        self.notify: Callable[[], None] = lambda: None

    def push(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)
        self.notify()

    def take(self) -> list[Chunk]:
        out = list(self.chunks)
        self.chunks.clear()
        return out


_followers: dict[str, set[Follower]] = {}
_producers: dict[str, Producer] = {}


def followers(run_id: str) -> set[Follower] | None:
    """The run's live followers in this process, if any (the producer's cheap check)."""
    return _followers.get(run_id)


@contextlib.contextmanager
def follow(run_id: str) -> Iterator[tuple[Follower, Snapshot | None]]:
    """Follow the run's chunks from now on; with the producer's snapshot when the run
    executes in this process already (None: it does not yet, or not here)."""
    follower = Follower()
    _followers.setdefault(run_id, set()).add(follower)
    producer = _producers.get(run_id)
    try:
        yield follower, producer.snapshot() if producer is not None else None
    finally:
        group = _followers.get(run_id)
        if group is not None:
            group.discard(follower)
            if not group:
                del _followers[run_id]


def progress(run_id: str) -> Snapshot | None:
    """The run's producer's state now, without its pending chunks: a stream whose
    snapshot said some flushed chunks were not stored yet asks again."""
    producer = _producers.get(run_id)
    return producer.snapshot(pending=False) if producer is not None else None


def produce(run_id: str, producer: Producer) -> Callable[[], None]:
    """Register the run's producer (its executing translator); returns the unregister."""
    _producers[run_id] = producer

    def done() -> None:
        if _producers.get(run_id) is producer:
            del _producers[run_id]

    return done


def advance(have: int, got: set[int]) -> int:
    """The highest chunk up to which every one is had: ``have`` and then those of ``got``
    that follow it without a hole (taken out of ``got``, as are those below it)."""
    while have + 1 in got:
        have += 1
        got.discard(have)
    for n in [n for n in got if n <= have]:
        got.discard(n)
    return have


def chunk_data(chunk: Chunk) -> dict[str, Any]:
    """A live chunk in the shape of a ``message.delta`` holding it alone."""
    return {
        "id": chunk.message_id,
        "node": chunk.node,
        "ns": chunk.ns,
        "content": chunk.text,
        "tool_call_chunks": chunk.tool_call_chunks,
        "epoch": chunk.epoch,
        "n": [chunk.n],
    }


def part(data: dict[str, Any], numbers: list[int]) -> dict[str, Any]:
    """The chunks ``numbers`` of a ``message.delta``, as one delta."""
    content: str = data.get("content", "")
    tools: list[Any] = data.get("tool_call_chunks") or []
    cuts = data.get("cuts") or [len(content)]
    # one chunk has no cuts; no tool_cuts: no chunk had tool call chunks, or one did
    tool_cuts = data.get("tool_cuts") or [len(tools)] * len(data["n"])
    text: list[str] = []
    calls: list[Any] = []
    for k, n in enumerate(data["n"]):
        if n in numbers:
            text.append(content[(cuts[k - 1] if k else 0) : cuts[k]])
            calls.extend(tools[(tool_cuts[k - 1] if k else 0) : tool_cuts[k]])
    return {**data, "content": "".join(text), "tool_call_chunks": calls}
