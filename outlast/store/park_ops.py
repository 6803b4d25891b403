"""Parking a run on its waits (``WaitStore.park``), written once for both backends over
``Tx``: the worker's graph stopped at interrupts, and its holder records their waits and
gives the run back, in one fenced transaction whose steps are the functions below.

The run's row is locked first, under the holder's lease (LeaseLost before anything is
written), so the decision at the end sees a cancel that committed after the graph
stopped. The waits are written before that decision because it depends on them: a wait
whose answer is already there (it arrived while the run ran, or a signal came first,
within the lookback window) queues the run again at once instead of leaving it waiting.
A wait never hangs because of the order in which two messages arrived.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from outlast.store import transitions
from outlast.store.hub import WAITS
from outlast.store.records import EventDraft, Lease, Run, Wait, WaitSpec
from outlast.store.transition_ops import apply, facts_of, leased
from outlast.store.transitions import Change
from outlast.store.tx import Tx, TxProvider, append_events
from outlast.store.wait_ops import ended
from outlast.vocabulary import EventType, RunStatus


class ParkOps(TxProvider):
    async def park(
        self,
        lease: Lease,
        specs: Sequence[WaitSpec],
        lookback: float,
        events: Sequence[EventDraft] = (),
    ) -> RunStatus:
        """The run stopped at interrupts: record its waits and give it back (fenced)."""
        async with self._writing() as tx:
            run = await leased(tx, lease)
            await _consume_answers(tx, run.id, specs)
            drafts = list(events)
            for spec in await _new_interrupts(tx, run.id, specs):
                drafts += await _open_wait(tx, run.id, spec, lookback)
            change = await _next_status(tx, run, specs)
            await _announce(tx, run, drafts, change, specs)
            return change.status


async def _consume_answers(tx: Tx, run_id: str, specs: Sequence[WaitSpec]) -> None:
    """Answers to the interrupts the graph did not raise again were consumed by the resume
    that brought it here: they become ``resumed``, so they neither count as an answer
    waiting (which would queue the run again) nor are resumed twice."""
    pending = [s.interrupt_id for s in specs]
    await tx.rows("w_resume_consumed", run_id=run_id, pending=tx.encode_json(pending))


async def _new_interrupts(tx: Tx, run_id: str, specs: Sequence[WaitSpec]) -> list[WaitSpec]:
    """The interrupts that need a wait. One still pending from before (a partial resume
    re-raises the others with the same interrupt id) keeps the wait it has, and the
    answer that may already be there: a second wait would ask the same question twice."""
    return [
        spec
        for spec in specs
        if not await tx.rows("w_find_live", run_id=run_id, interrupt_id=spec.interrupt_id)
    ]


async def _open_wait(tx: Tx, run_id: str, spec: WaitSpec, lookback: float) -> list[EventDraft]:
    """A new interrupt's wait and its ``wait.started``, then its ``wait.ended`` if a signal
    answers it at once (``_early_signal``)."""
    rows = await tx.rows(
        "w_insert",
        id=str(uuid.uuid4()),
        run_id=run_id,
        interrupt_id=spec.interrupt_id,
        kind=spec.kind,
        object=tx.encode_json(spec.object),
        prompt=tx.encode_json(spec.prompt),
        schema=tx.encode_json(spec.schema),
        event_keys=tx.encode_json(spec.event_keys),
        has_default=spec.has_default,
        default_answer=tx.encode_json(spec.default),
        probe=tx.encode_json(spec.probe),
        wake_at=tx.encode_time(spec.wake_at),
        wake_in=spec.wake_in,
        lease_grace=float((spec.probe or {}).get("every", 0.0)),
    )
    wait = tx.wait(rows[0])
    # the interrupt it stands for, so a client of the log can answer it by its id
    interrupt = {"id": spec.interrupt_id, "value": spec.value}
    drafts = [EventDraft(EventType.WAIT_STARTED, {"wait": wait.public(), "interrupt": interrupt})]
    early = await _early_signal(tx, wait, spec, lookback)
    return drafts if early is None else [*drafts, early]


async def _early_signal(tx: Tx, wait: Wait, spec: WaitSpec, lookback: float) -> EventDraft | None:
    """Answer an event wait with a signal on one of its keys sent within ``lookback``
    seconds before it (the sender's principal's, kept by ``signal``): the signal that
    beat the interrupt is not lost. Its ``wait.ended``, or None."""
    if not spec.event_keys or lookback <= 0:
        return None
    early = await tx.rows(
        "sig_lookback", keys=tx.encode_json(spec.event_keys), lookback=lookback, run_id=wait.run_id
    )
    if not early:
        return None
    value = {"key": early[0]["key"], "payload": tx.decode_json(early[0]["payload"])}
    await tx.rows("w_answer", id=wait.id, answer=tx.encode_json(value), how="signal", key=None)
    return ended(wait, "signal", value)


async def _next_status(tx: Tx, run: Run, specs: Sequence[WaitSpec]) -> Change:
    """What the run becomes, decided once in ``transitions.park`` on the row as locked (a
    cancel that came meanwhile, what the run owes) and on whether an answer is already
    there, counted once the new waits have taken their early signals."""
    answered = (await tx.rows("w_count_answered", run_id=run.id))[0]["n"]
    return transitions.park(
        await facts_of(tx, run),
        answered=bool(answered),
        waits=len(specs),
        kinds=[spec.kind for spec in specs],
    )


async def _announce(
    tx: Tx, run: Run, drafts: Sequence[EventDraft], change: Change, specs: Sequence[WaitSpec]
) -> None:
    """Write the decision after the events that led to it: the caller's (the stream parts
    that show the interrupts), then each new wait's, then the run's. A client that sees an
    interrupt can answer it at once, because its wait exists by then. Notifications go out
    at commit; WAITS too when a wait has a wake time, so the wakers re-plan their nap."""
    if drafts:
        await append_events(tx, run.id, drafts)
    await apply(tx, run, change)
    if any(spec.wake_at is not None or spec.wake_in is not None for spec in specs):
        await tx.notify(WAITS, run.id)
