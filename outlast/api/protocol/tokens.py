"""A thread stream's model chunks: each sent once, in order, live or from the log.

When the run a stream reads executes in this process, its chunks reach the stream live
(``runtime.live``) as the model makes them, and again, coalesced, in the log's
``message.delta`` events. The run's translator (``translate.py``) knows the execution in
progress and ``stored``: the chunks of it the log read so far holds without a hole.
``Tokens`` keeps ``have``: every chunk up to it has reached the client (it is at least
``stored``). A live chunk goes out when it is the next one (``have + 1``) and waits
otherwise (earlier ones are still on their way through the log); a delta's chunks go out
unless the client has them.

A live chunk's place (``cursor.py``) is in the slot of the last stored event the stream
read, S: ``k = n - stored`` (how far it is past the log up to S) and its event's index.
The log alone gives ``stored`` at S, so a client coming back with that cursor, to any
process, is known to have the log up to S, the chunks up to ``stored + k - 1``, and the
events up to ``i`` of chunk ``stored + k``: the stream replays the log after S, sends the
rest of that chunk and what follows, and nothing it had. A live chunk that cannot have a
place (too far past the log, too many events, under a subgraph the log has not opened)
waits for the log, as every token did before.

Each chunk's events carry the same event id live and from the log (``(pos, epoch, n,
index)``), so a client that deduplicates by id (the JS SDK reconnects without ``since``)
sees one copy; their ``seq`` is their place on this connection.
"""

from __future__ import annotations

from outlast.api.protocol.cursor import K_MAX, SUB_MAX, Position
from outlast.api.protocol.translate import Part, RunTranslator
from outlast.runtime.live import Chunk
from outlast.store import Event

Placed = tuple[Position, Part]


class Tokens:
    """One stream's bookkeeping of the chunks its client has, for the run it reads."""

    def __init__(
        self,
        translator: RunTranslator,
        after: int,
        resume: tuple[int, int] | None = None,
        ready_at: int = 0,
    ) -> None:
        self._t = translator
        self._pos = translator.run.pos
        self._slot = after  # the stored events up to here were read
        # nothing goes live before the stream has read the event its cursor sits in
        self._ready_at = ready_at
        self._epoch = translator.epoch
        self._ended = -1  # executions up to this one are over
        self._have = -1
        self._fed = -1  # the translator has read every chunk up to here (log or live)
        self._partial: tuple[int, int] | None = None  # chunk n: its events up to i sent
        self._held: dict[tuple[int, int], Chunk] = {}
        if resume is not None and self._epoch is not None:
            k, i = resume
            self._have = translator.stored + k - 1
            self._partial = (self._have + 1, i)
        self._absorb()

    def stored(self, event: Event) -> list[Placed]:
        """The stored event's parts the client lacks, then the live chunks now due."""
        parts = self._t.parts(event)
        self._slot = event.seq
        self._sync()
        out: list[Placed] = []
        for sub, part in enumerate(parts):
            if sub >= SUB_MAX:
                raise OverflowError(f"event {event.seq} of run {event.run_id} became too many")
            if not part.echo and self._lacks(part):
                out.append((Position(self._pos, event.seq, sub), part))
        self._absorb()
        return out + self._drain()

    def live(self, chunks: list[Chunk]) -> list[Placed]:
        for chunk in chunks:
            self._held[(chunk.epoch, chunk.n)] = chunk
        return self._drain()

    def _lacks(self, part: Part) -> bool:
        if part.chunk is None:
            return True
        epoch, n, index = part.chunk
        if epoch != self._epoch:
            return True
        if self._partial is not None and self._partial[0] == n:
            return index > self._partial[1]
        return n > self._have

    def _sync(self) -> None:
        """A new execution (or none) in progress: what the client had of the last one
        is over."""
        if self._t.epoch != self._epoch:
            if self._epoch is not None:
                self._ended = max(self._ended, self._epoch)
            self._epoch, self._have, self._fed, self._partial = self._t.epoch, -1, -1, None

    def _absorb(self) -> None:
        """The client has every chunk the log read so far holds."""
        while self._t.holds(self._have + 1):
            self._have += 1
        while self._t.holds(self._fed + 1):
            self._fed += 1
        if self._partial is not None and self._partial[0] <= self._have:
            self._partial = None

    def _drain(self) -> list[Placed]:
        out: list[Placed] = []
        current = self._epoch if self._epoch is not None else self._ended + 1
        for epoch, n in sorted(self._held):
            if epoch <= self._ended or epoch < current or (epoch == current and n <= self._fed):
                del self._held[(epoch, n)]  # an execution that is over, or read already
        while self._epoch is not None and self._slot >= self._ready_at:
            chunk = self._held.get((self._epoch, self._fed + 1))
            k = chunk.n - self._t.stored if chunk is not None else 0
            if chunk is None or k > K_MAX:
                return out
            parts = self._t.live(chunk)
            if parts is None:
                return out
            del self._held[(chunk.epoch, chunk.n)]
            self._fed = chunk.n
            if chunk.n <= self._have:
                # the client had it (live, on the connection its cursor is from): read
                # again, for what the chunks after it become, not sent
                continue
            self._have = chunk.n
            for index, part in enumerate(parts):
                if self._partial is None or index > self._partial[1]:
                    out.append((Position.live(self._pos, self._slot, k, index), part))
            self._partial = None
        return out
