"""The thread stream's cursor: one integer, durable, the same in every process.

The protocol's clients keep the ``seq`` of the last event they saw (the largest: the
Python SDK keeps the maximum) and send it back as ``since`` (and take
``meta.applied_through_seq`` of a command's answer as one), so the cursor must be an
integer, strictly increasing along the thread's stream, and exact across connections,
processes and restarts. Runs of a thread execute one at a time in acceptance order
(``Run.pos``), their logs are durable and ordered (``seq``), and one stored event may
become several protocol events (``sub``); packing the three into one integer gives that,
without a per-thread counter on the hot path.

A model's token chunk sent live (``api.protocol.tokens``) sits between stored events: it
reaches the client once the stream has read the log up to some ``seq`` S, and is stored
later in a ``message.delta`` whose seq nobody knows yet. So its place is in S's slot,
after everything S became: ``sub`` has two lanes. Below ``LIVE_FROM`` it is the index
among the protocol events S became (``SUB_MAX``, the lane's last, is kept for what the
stream says at a place rather than translates there: the snapshot after a gap, and the
command's head). From ``LIVE_FROM`` it is a live chunk's: ``k``, how far the chunk is
past the chunks the log up to S holds (the chunk numbered ``base(S) + k`` of the
execution in progress at S, ``base`` being a function of the log alone), and ``i``, the
index among the protocol events that chunk became. So a live cursor names, from the log
and the chunk numbering alone, exactly what its client has, in any process. A chunk
further past the log than the lane holds, or one that would become more events than
``PER_CHUNK``, is not sent live: it waits for the log (as every token did before).

The widths keep every cursor below 2**53, so JavaScript clients hold it exactly: about
half a million runs per thread, 8 million events per run, 255 protocol events per stored
event (a step's update can become many: the messages it finishes, block by block, and a
tool event per call), and live chunks up to ``K_MAX`` past the log (224: at the default
0.1 s flush interval the log is never that far behind a model).
"""

from __future__ import annotations

from dataclasses import dataclass

from outlast.store.contract.threads import ThreadStore

_SUB_BITS = 11
_SEQ_BITS = 23
_POS_BITS = 19
LIVE_FROM = 256  # subs below: a stored event's protocol events; from here: live chunks'
SUB_MAX = LIVE_FROM - 1
PER_CHUNK = 8  # protocol events a live chunk may become (its index's room in the lane)
K_MAX = ((1 << _SUB_BITS) - LIVE_FROM) // PER_CHUNK
_SEQ_MAX = (1 << _SEQ_BITS) - 1
_POS_MAX = (1 << _POS_BITS) - 1


@dataclass(frozen=True, order=True)
class Position:
    """Where a protocol event sits on its thread's stream: the run's place in the thread,
    the stored event's ``seq`` in that run's log, and its index among the protocol events
    that stored event became (or, from ``LIVE_FROM``, a live chunk's place after it)."""

    pos: int
    seq: int
    sub: int = 0

    @classmethod
    def live(cls, pos: int, seq: int, k: int, i: int) -> Position:
        """Event ``i`` of the live chunk ``k`` past the chunks the log up to ``seq``
        holds."""
        if not (1 <= k <= K_MAX and 0 <= i < PER_CHUNK):
            raise OverflowError(f"live chunk {k} (event {i}) is beyond the cursor's lane")
        return cls(pos, seq, LIVE_FROM + (k - 1) * PER_CHUNK + i)

    def chunk(self) -> tuple[int, int] | None:
        """``(k, i)`` of a live chunk's position; None for a stored event's."""
        if self.sub < LIVE_FROM:
            return None
        k, i = divmod(self.sub - LIVE_FROM, PER_CHUNK)
        return k + 1, i

    def packed(self) -> int:
        if not (0 <= self.pos <= _POS_MAX and 0 <= self.seq <= _SEQ_MAX):
            raise OverflowError(f"thread stream position {self} is beyond the cursor's range")
        if not 0 <= self.sub < 1 << _SUB_BITS:
            raise OverflowError(f"stored event became more than {SUB_MAX + 1} protocol events")
        return (self.pos << (_SEQ_BITS + _SUB_BITS)) | (self.seq << _SUB_BITS) | self.sub

    @classmethod
    def unpacked(cls, cursor: int) -> Position:
        if not 0 <= cursor < 1 << (_POS_BITS + _SEQ_BITS + _SUB_BITS):
            raise ValueError(f"{cursor} is not a thread stream cursor")
        return cls(
            pos=cursor >> (_SEQ_BITS + _SUB_BITS),
            seq=(cursor >> _SUB_BITS) & _SEQ_MAX,
            sub=cursor & ((1 << _SUB_BITS) - 1),
        )


async def thread_head(store: ThreadStore, thread_id: str) -> int:
    """The cursor of everything the thread's stream holds now (0 for a thread with no run).

    A command answers with it as ``applied_through_seq``, read before the command acts:
    whatever the command causes comes after it, so a subscription opened with it as
    ``since`` misses none of that and replays nothing older. (Live chunks not yet stored
    are after it too: such a subscription gets them.)"""
    run = await store.latest_run(thread_id)
    if run is None:
        return 0
    return Position(run.pos, run.last_seq, SUB_MAX).packed()
