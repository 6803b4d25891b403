"""The thread stream's cursor: one integer, durable, the same in every process.

The protocol's clients keep the ``seq`` of the last event they saw and send it back as
``since`` (and take ``meta.applied_through_seq`` of a command's answer as one), so the
cursor must be an integer, strictly increasing along the thread's stream, and exact across
connections, processes and restarts. Runs of a thread execute one at a time in acceptance
order (``Run.pos``), their logs are durable and ordered (``seq``), and one stored event may
become several protocol events (``sub``); packing the three into one integer gives that,
without a per-thread counter on the hot path. The widths keep every cursor below 2**53, so
JavaScript clients hold it exactly: about a million runs per thread, 33 million events per
run, 255 protocol events per stored event (a step's update can become many: the messages it
finishes, block by block, and a tool event per call); the last ``sub`` of each stored event,
``SUB_MAX``, is kept for what the stream says at a place rather than translates there (the
snapshot after a gap).
"""

from __future__ import annotations

from dataclasses import dataclass

from outlast.store.contract.threads import ThreadStore

_SUB_BITS = 8
_SEQ_BITS = 25
_POS_BITS = 20
SUB_MAX = (1 << _SUB_BITS) - 1
_SEQ_MAX = (1 << _SEQ_BITS) - 1
_POS_MAX = (1 << _POS_BITS) - 1


@dataclass(frozen=True, order=True)
class Position:
    """Where a protocol event sits on its thread's stream: the run's place in the thread,
    the stored event's ``seq`` in that run's log, and its index among the protocol events
    that stored event became."""

    pos: int
    seq: int
    sub: int = 0

    def packed(self) -> int:
        if not (0 <= self.pos <= _POS_MAX and 0 <= self.seq <= _SEQ_MAX):
            raise OverflowError(f"thread stream position {self} is beyond the cursor's range")
        if not 0 <= self.sub <= SUB_MAX:
            raise OverflowError(f"stored event became more than {SUB_MAX + 1} protocol events")
        return (self.pos << (_SEQ_BITS + _SUB_BITS)) | (self.seq << _SUB_BITS) | self.sub

    @classmethod
    def unpacked(cls, cursor: int) -> Position:
        if not 0 <= cursor < 1 << (_POS_BITS + _SEQ_BITS + _SUB_BITS):
            raise ValueError(f"{cursor} is not a thread stream cursor")
        return cls(
            pos=cursor >> (_SEQ_BITS + _SUB_BITS),
            seq=(cursor >> _SUB_BITS) & _SEQ_MAX,
            sub=cursor & SUB_MAX,
        )


async def thread_head(store: ThreadStore, thread_id: str) -> int:
    """The cursor of everything the thread's stream holds now (0 for a thread with no run).

    A command answers with it as ``applied_through_seq``, read before the command acts:
    whatever the command causes comes after it, so a subscription opened with it as
    ``since`` misses none of that and replays nothing older."""
    run = await store.latest_run(thread_id)
    if run is None:
        return 0
    return Position(run.pos, run.last_seq, SUB_MAX).packed()
