"""A run stream's model chunks: each sent once, in order, live or from the log.

When the run executes in this process, its chunks reach the stream live
(``runtime.live``) as the model produces them, and again, coalesced, in the log's
``message.delta`` events, which record the numbers (``n``, per execution ``epoch``) of the
chunks they hold. ``Tokens`` keeps, per execution, ``have``: every chunk up to it has
reached the client (before its cursor, from the log, or live). A live chunk goes out
when it is the next one (``have + 1``), and waits otherwise (earlier chunks are still on
their way through the log); a ``message.delta`` goes out with only the chunks the client
lacks: usually none, and then nothing is sent.

The event ids say what the client has. ``<seq>``: every event up to that seq, as always.
``<seq>.<epoch>.<n>`` while the client has chunks the log's events up to ``seq`` do not
hold (sent live): the log up to ``seq``, and chunks up to ``n`` of execution ``epoch``;
a rejoin with it replays the log after ``seq`` and skips those chunks. Once the log has
caught up with what went live, ids are plain seqs again.

A log event goes out when the stream reads it; a live chunk may overtake a non-message
event put on the log before it whose write is still in flight (a step's ``updates``
wait for their checkpoint write): every event and chunk still reaches the client once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sse_starlette import ServerSentEvent

from outlast.api.lg.wire import Wire
from outlast.runtime.live import Chunk, Snapshot, advance, chunk_data, part
from outlast.store import Event
from outlast.vocabulary import EventType

_LIVE_ID = re.compile(r"^(\d{1,18})\.(\d{1,18})\.(\d{1,18})$")


def live_part(last_event_id: str | None) -> tuple[int, int] | None:
    """``(epoch, n)`` of a ``<seq>.<epoch>.<n>`` id: the chunks the client got live."""
    match = _LIVE_ID.match((last_event_id or "").strip())
    return (int(match.group(2)), int(match.group(3))) if match else None


def seq_part(last_event_id: str) -> str:
    """The ``<seq>`` of an id (the whole id when it has no live part)."""
    match = _LIVE_ID.match(last_event_id.strip())
    return match.group(1) if match else last_event_id


class Tokens:
    """One stream's bookkeeping of the model chunks its client has."""

    def __init__(
        self,
        wire: Wire,
        seq: int,
        resume: tuple[int, int] | None,
        probe: Callable[[], Snapshot | None] = lambda: None,
    ) -> None:
        self._wire = wire
        self._probe = probe  # the producer's state now (runtime.live.progress)
        self._seq = seq  # the log's events up to here have reached the client
        self._have: dict[int, int] = {}
        self._got: dict[int, set[int]] = {}  # chunks the client has beyond `have`
        # chunks up to n (of epoch) reached the client live and may be in no event of the
        # log up to `seq`: the ids say so
        self._ahead: tuple[int, int] | None = resume
        self._primed = resume  # reached the client on an earlier connection
        self._primed_n: set[int] = set()  # of those, the ones `messages/partial` knows
        self._held: dict[tuple[int, int], Chunk] = {}
        self._snap: Snapshot | None = None
        if resume is not None:
            self._have[resume[0]] = resume[1]

    def ident(self) -> str:
        if self._ahead is None:
            return str(self._seq)
        return f"{self._seq}.{self._ahead[0]}.{self._have[self._ahead[0]]}"

    def joined(self, snap: Snapshot) -> None:
        """The producer's state as the stream began following it live: its unflushed
        chunks are live chunks to this stream."""
        self._snap = snap
        for chunk in snap.pending:
            self._held[(chunk.epoch, chunk.n)] = chunk
        self._settle_snapshot()

    def live(self, chunks: list[Chunk]) -> list[ServerSentEvent]:
        for chunk in chunks:
            self._held[(chunk.epoch, chunk.n)] = chunk
        return self._drain()

    def event(self, event: Event) -> list[ServerSentEvent]:
        data = event.data
        if event.type == EventType.MESSAGE_DELTA and "n" in data and "epoch" in data:
            return self._delta(event)
        self._seq = event.seq
        self._settle_snapshot()
        return self._wire.frames(event, self.ident()) + self._drain()

    def _delta(self, event: Event) -> list[ServerSentEvent]:
        data = event.data
        self._wire.saw(data.get("id"))  # sent now, or live before: not again whole
        epoch, numbers = int(data["epoch"]), [int(n) for n in data["n"]]
        low = min(numbers)
        # chunks numbered below this event's are in earlier events: the client has them
        have = max(self._have.get(epoch, low - 1), low - 1)
        got = self._got.setdefault(epoch, set())
        send = [n for n in numbers if n > have and n not in got]
        got.update(send)
        self._have[epoch] = advance(have, got)
        self._seq = event.seq
        self._caught_up(epoch, low, numbers)
        self._settle_snapshot()
        if len(send) == len(numbers):
            out = self._wire.frames(event, self.ident())
        else:
            self._prime(epoch, [n for n in numbers if n not in send], data)
            out = self._wire.message_frames(_part(data, send), self.ident()) if send else []
        return out + self._drain()

    def _prime(self, epoch: int, numbers: list[int], data: dict[str, Any]) -> bool:
        """What the client got before this connection, for ``messages/partial`` (once:
        an unflushed chunk is primed as the stream learns of it, and again met in the
        log). False: not the client's from before."""
        primed = self._primed
        if primed is None or primed[0] != epoch:
            return False
        numbers = [n for n in numbers if n <= primed[1] and n not in self._primed_n]
        if numbers:
            self._primed_n.update(numbers)
            self._wire.prime_data(part(data, numbers))
        return True

    def _caught_up(self, epoch: int, low: int, numbers: list[int]) -> None:
        """The log up to this event holds every chunk that went live, or not yet."""
        if self._ahead is None:
            return
        ahead_epoch, top = self._ahead
        if ahead_epoch != epoch:
            # an execution's events all precede the next one's (its writes are fenced)
            self._ahead = None
            return
        held = set(numbers)
        if low > top or all(n in held for n in range(low, top + 1)):
            self._ahead = None

    def _settle_snapshot(self) -> None:
        """Chunks up to the snapshot's ``flushed`` are in the log up to ``written_upto``:
        once the stream is past it, the client has them, wherever they were."""
        snap = self._snap
        if snap is None:
            return
        if snap.written_upto is None and snap.flushed >= 0:
            # some were still being written: the state now says as much, or more
            snap = self._snap = self._probe() or snap
        if snap.flushed < 0 or (snap.written_upto is not None and self._seq >= snap.written_upto):
            have = self._have.get(snap.epoch, -1)
            self._have[snap.epoch] = advance(
                max(have, snap.flushed), self._got.setdefault(snap.epoch, set())
            )
            self._snap = None

    def _drain(self) -> list[ServerSentEvent]:
        out: list[ServerSentEvent] = []
        for key in sorted(self._held):
            chunk = self._held[key]
            have = self._have.get(chunk.epoch)
            if have is None and chunk.n == 0:
                have = -1  # an execution's first chunk: nothing came before it
            if have is None:
                continue
            got = self._got.setdefault(chunk.epoch, set())
            if chunk.n <= have or chunk.n in got:
                # the client had it before this connection: `messages/partial` learns it
                # once every flushed chunk before it has been read (the snapshot settled)
                if self._snap is not None and self._primes(chunk):
                    continue
                self._prime(chunk.epoch, [chunk.n], chunk_data(chunk))
                del self._held[key]
                continue
            if chunk.n != have + 1:
                continue  # earlier chunks are still on their way through the log
            del self._held[key]
            self._have[chunk.epoch] = advance(chunk.n, got)
            self._ahead = (chunk.epoch, chunk.n)
            data = chunk_data(chunk)
            if chunk.last:
                data["last"] = True
            out.extend(self._wire.message_frames(data, self.ident()))
        return out

    def _primes(self, chunk: Chunk) -> bool:
        primed = self._primed
        return primed is not None and primed[0] == chunk.epoch and chunk.n <= primed[1]


def _part(data: dict[str, Any], numbers: list[int]) -> dict[str, Any]:
    """``part``, marked ``last`` only if it holds the delta's last chunk."""
    sent = part(data, numbers)
    if sent.get("last") and max(data["n"]) not in numbers:
        del sent["last"]
    return sent
