"""The cold-path transitions of a run, each decided once, here, for both backends.

A cancel, a release (a drain, a budget or supervisor release), a park at interrupts, a
reap, the recording of
how a run owing compensations ends (``set_ending``) and the LangGraph face's cancels are
each a function of the run row as it is once locked, and of what the caller asked. The
function says what changes: the new status, ending and error, whether the worker keeps
the run, the event, whether open waits are withdrawn, which notifications go out. The
backends only lock the row, ask, and write what they are told (``transition_ops.py``):
a rule fixed here is fixed on Postgres and SQLite at once, and is tested without a
database (``tests/test_transitions.py``).

Nothing here reads a clock or a database: the facts come in (``Facts``), a ``Change``
(or ``None``: nothing to do) goes out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS
from outlast.store.records import Effect, EventDraft, Run
from outlast.vocabulary import EffectStatus, EventType, RunStatus, Takeover

# Who hears of each transition: followers of the log (EVENTS), the claim loops (QUEUE),
# result waiters (STATUS), and for a cancel the worker that holds the run (CONTROL).
CANCEL_NOTES = (EVENTS, CONTROL, QUEUE, STATUS)
END_NOTES = (EVENTS, QUEUE, STATUS)

LOST_REASON = "worker lease expired"
# The error type of a run failed by the reaper: lost on its last counted attempt.
WORKER_LOST = "worker_lost"
# Why a run parked while its cancel was pending is not waiting.
PARKED_CANCELLING = "cancelled while running"
# The error type of a run that new input replaced while it asked a client something.
SUPERSEDED = "superseded"


def owed(effects: Sequence[Effect]) -> list[Effect]:
    """The effects a run owes compensations for, latest first: those that declared an
    undoing (``compensate=``), may have happened, and are not undone yet.

    The one definition, for the store's transitions (does this run go back to a worker
    to compensate?) and for the worker that compensates (what is there to undo?):

    - *declared an undoing*: nothing else can be undone;
    - *may have happened*: every status but ``failed``. ``done`` happened; ``started``
      and ``unknown`` (its node cancelled mid-call, its worker killed) may have, and a
      person is asked before it is undone or skipped, never guessed; ``failed`` did not;
    - *not undone yet*: an undoing recorded ``done`` (``undo:<key>``, ``compensates``
      naming the effect) settles it, so a successor never undoes an effect twice.
    """
    undone = {e.compensates for e in effects if e.compensates and e.status == EffectStatus.DONE}
    due = [
        e
        for e in effects
        if e.compensate and e.status != EffectStatus.FAILED and e.key not in undone
    ]
    return sorted(due, key=lambda e: (e.finished_at or e.started_at, e.started_at), reverse=True)


@dataclass(frozen=True, slots=True)
class Facts:
    """What a transition reads of the locked run row (and of its ledger)."""

    status: RunStatus
    worker_id: str | None = None
    attempts: int = 0
    max_attempts: int = 1
    ending: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    effects_owed: bool = False  # ``owed(effects)`` is not empty
    ran: bool = False  # it was claimed at least once (lease epoch > 0): it may have written
    # its current attempt saved a step since its claim (``progressed``); asked by the
    # reaper only
    progressed: bool = False

    @classmethod
    def of(cls, run: Run, effects: Sequence[Effect]) -> Facts:
        return cls(
            status=run.status,
            worker_id=run.worker_id,
            attempts=run.attempts,
            max_attempts=run.max_attempts,
            ending=run.ending,
            error=run.error,
            effects_owed=bool(owed(effects)),
            ran=run.lease_epoch > 0,
        )


@dataclass(frozen=True, slots=True)
class Ask:
    """What a cancel asked for. Kept in the run's ``error`` (``Ask.of`` reads it back),
    so whoever ends the run later (its worker, a release, the reaper) does what was
    asked: ``kind`` is the error type (``superseded`` when new input replaced an
    interrupted run), ``compensate`` whether its effects are undone (``None``: yes, and
    the error does not say so; LangGraph's ``interrupt`` keeps the state and with it
    what the run booked, so it says ``False``), ``rollback`` whether the thread goes back
    to where it was before the run (LangGraph's ``rollback``: its checkpoints are undone
    by the worker that ends it, ``runtime/options.py:undo_run``)."""

    reason: str = "cancelled"
    kind: str = "cancelled"
    compensate: bool | None = None
    rollback: bool = False

    @classmethod
    def supersede(cls, reason: str) -> Ask:
        """New input on a thread replaces the run that asks a client something: its
        LangGraph run had ended at the interrupt (it is not shown as cancelled), and its
        effects are kept, as LangGraph's ``interrupt`` keeps them."""
        return cls(reason, SUPERSEDED, compensate=False)

    @classmethod
    def of(cls, error: dict[str, Any] | None) -> Ask:
        error = error or {}
        compensate = error.get("compensate")
        return cls(
            reason=str(error.get("reason") or "cancelled"),
            kind=str(error.get("type") or "cancelled"),
            compensate=None if compensate is None else bool(compensate),
            rollback=bool(error.get("rollback")),
        )

    def error(self) -> dict[str, Any]:
        """The run's error once cancelled so."""
        error: dict[str, Any] = {"type": self.kind, "reason": self.reason}
        if self.compensate is not None:
            error["compensate"] = self.compensate
        if self.rollback:
            error["rollback"] = True
        return error

    def ending(self) -> dict[str, Any]:
        """How a run cancelled so ends once it has done what it owes: its status and
        error, and what the worker that ends it does first (``compensates``,
        ``rolls_back``)."""
        ending: dict[str, Any] = {
            "status": RunStatus.CANCELLED.value,
            "error": {"type": self.kind, "reason": self.reason},
        }
        if self.compensate is False:
            ending["compensate"] = False
        if self.rollback:
            ending["rollback"] = True
        return ending


def owes(facts: Facts, ask: Ask) -> bool:
    """Whether a run ending as ``ask`` says has work to do before it may end, which only a
    worker holding it can do: effects to undo (``owed``), unless the cancel said not to
    compensate; or a rollback asked of a run that ran (one never claimed wrote nothing,
    and is cancelled at once). A run that owes is not ended by a cancel, a release or
    the reaper: it is ``cancelling`` (or queued) with its ending recorded, and the worker
    that claims it does the work, then ends it so."""
    undo = ask.compensate is not False and facts.effects_owed
    return undo or (ask.rollback and facts.ran)


# Why a run whose thread was deleted under it was cancelled.
THREAD_DELETED = "its thread was deleted"


def outlives_its_thread(facts: Facts) -> bool:
    """Whether a run stays when its thread is deleted (``DELETE /threads/{id}``, a TTL,
    a prune), to be cancelled with ``Ask(THREAD_DELETED)`` and undo what it did. The
    thread's other runs go with it (a worker executing one loses its lease: the row is
    gone). A run that may have done something it declared an undoing for is not deleted
    with the evidence of it: it is cancelled, compensating, and kept until its worker has
    undone its effects and recorded so (then retention takes it). Without this a deleted
    thread's booking stayed booked, its run gone."""
    if facts.status == RunStatus.CANCELLING:
        return facts.ending is not None and compensates(facts.ending)  # undoing already
    active = (RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING)
    return facts.status in active and facts.effects_owed


def compensates(ending: dict[str, Any]) -> bool:
    """Whether the worker ending a run so undoes its effects first (not when the person
    asked to settle one gave the rest up by cancelling it)."""
    return ending.get("compensate") is not False


def rolls_back(ending: dict[str, Any]) -> bool:
    """Whether the worker ending a run so puts its thread back where it was before the
    run (after the compensations, before the run ends)."""
    return bool(ending.get("rollback"))


@dataclass(frozen=True, slots=True)
class Change:
    """What a transition writes: the row's new ``status``, ``ending`` and ``error``,
    ``attempts`` added (``-1``: the attempt is given back), whether the worker keeps the
    run (its lease and activity), whether the lease epoch moves on (the holder that
    released it, or was lost, is fenced), the event appended, whether the run's open and
    answered waits are withdrawn, and the notifications sent at commit."""

    status: RunStatus
    ending: dict[str, Any] | None
    error: dict[str, Any] | None
    event: EventDraft
    attempts: int = 0
    keep_worker: bool = False
    new_epoch: bool = False
    withdraw_waits: bool = False
    notify: tuple[str, ...] = END_NOTES


def _event(status: RunStatus, kind: str, **data: Any) -> EventDraft:
    return EventDraft(kind, {"status": status.value, **data})


def cancel(facts: Facts, ask: Ask) -> Change | None:
    """A cancel (``request_cancel``, and the LangGraph face's ``interrupt``, ``rollback``
    and supersede). ``None`` for a run that is terminal or already cancelling: its end is
    decided, the cancel changes nothing and wakes nobody.

    A running run becomes ``cancelling`` and keeps its worker, which stops the node in
    flight and ends it (compensating first if it owes). A queued or waiting run has no
    worker to do that: it is ``cancelled`` at once, its waits withdrawn; unless it owes
    work, then it is ``cancelling`` with no worker and its ending recorded, and the claim
    hands it to a worker that does the work and ends it so. A queued run whose ending was
    recorded already (lost on its last attempt owing compensations) keeps that ending,
    and a rollback asked is added to it. A run waiting on a compensation a person must
    settle (its ending recorded) gives the rest of its compensations up: cancelled, or,
    if a rollback was asked, cancelling to do that only.
    """
    if facts.status not in (RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING):
        return None
    error = ask.error()
    if facts.status == RunStatus.RUNNING:
        status = RunStatus.CANCELLING
        return Change(
            status,
            facts.ending,
            error,
            _event(status, EventType.RUN_CANCELLING, reason=ask.reason),
            keep_worker=True,
            notify=CANCEL_NOTES,
        )
    ending: dict[str, Any] | None = None
    if facts.ending is not None and facts.status == RunStatus.QUEUED:
        ending = {**facts.ending, "rollback": True} if ask.rollback else facts.ending
    elif facts.ending is not None:
        # waiting on a compensation a person must settle: the rest is given up, not a
        # rollback asked with the cancel
        given_up = replace(ask, compensate=False)
        ending = given_up.ending() if owes(facts, given_up) else None
    elif owes(facts, ask):
        ending = ask.ending()
    status = RunStatus.CANCELLING if ending is not None else RunStatus.CANCELLED
    kind = EventType.RUN_CANCELLING if ending is not None else EventType.RUN_CANCELLED
    return Change(
        status,
        ending if ending is not None else facts.ending,
        error,
        _event(status, kind, reason=ask.reason),
        withdraw_waits=True,
        notify=CANCEL_NOTES,
    )


def release(facts: Facts, reason: str) -> Change:
    """The holder gives the run back (a drain, a budget or supervisor release): the
    facts are of the row as locked under the holder's lease, so a cancel committed
    meanwhile is seen. ``queued`` again, the attempt given back (the run stopped by
    request, not by failure). A ``cancelling`` run's cancel was the last word:
    ``cancelled`` (the attempt stays counted), unless it owes work; then it stays
    ``cancelling`` with no worker and its ending recorded, for the claim to hand on. A
    run whose ending was recorded keeps it, whatever it was doing."""
    ask = Ask.of(facts.error)
    ending = facts.ending
    if ending is None and facts.status == RunStatus.CANCELLING and owes(facts, ask):
        ending = ask.ending()
    if facts.status != RunStatus.CANCELLING:
        status = RunStatus.QUEUED
    else:
        status = RunStatus.CANCELLING if ending is not None else RunStatus.CANCELLED
    if status == RunStatus.CANCELLED:
        error = {"type": "cancelled", "reason": "cancelled while draining"}
        return Change(
            status,
            ending,
            error,
            _event(status, EventType.RUN_CANCELLED, reason=reason),
            new_epoch=True,
        )
    return Change(
        status,
        ending,
        facts.error,
        _event(status, EventType.RUN_RELEASED, reason=reason),
        attempts=-1,
        new_epoch=True,
    )


def park(facts: Facts, *, answered: bool, waits: int, kinds: Sequence[str]) -> Change:
    """The holder gives its run back at interrupts, their ``waits`` recorded (``park``):
    the facts are of the row as locked under the holder's lease, so a cancel committed
    after the graph stopped and before the park is seen. The attempt is given back
    (stopping to wait is not a failure); the epoch moves on.

    A cancelling run whose ending is not recorded: the cancel is the last word, its waits
    are withdrawn; ``cancelled``, unless it owes work (compensations, a rollback) that only
    a worker can do: then ``cancelling`` with no worker and its ending recorded, as a
    release leaves it, for the claim to hand on. Otherwise (running, or cancelling with
    its ending recorded: parked on a compensation a person settles): ``queued`` at once
    when an answer is already there (it came while the run ran, or a signal came first),
    else ``waiting``, which makes nothing claimable (no QUEUE)."""
    if facts.status == RunStatus.CANCELLING and facts.ending is None:
        ask = Ask.of(facts.error)
        owing = owes(facts, ask)
        status = RunStatus.CANCELLING if owing else RunStatus.CANCELLED
        kind = EventType.RUN_RELEASED if owing else EventType.RUN_CANCELLED
        return Change(
            status,
            ask.ending() if owing else None,
            facts.error,
            _event(status, kind, reason=PARKED_CANCELLING),
            attempts=-1,
            new_epoch=True,
            withdraw_waits=True,
        )
    notes: tuple[str, ...] = END_NOTES
    if answered:
        status = RunStatus.QUEUED
        event = _event(status, EventType.RUN_QUEUED, reason="answered before it waited")
    else:
        status = RunStatus.WAITING
        event = _event(status, EventType.RUN_WAITING, waits=waits, kinds=sorted(set(kinds)))
        notes = (EVENTS, STATUS)  # nothing became claimable
    return Change(
        status, facts.ending, facts.error, event, attempts=-1, new_epoch=True, notify=notes
    )


def progressed(saved_a_step: bool, durability: str) -> bool:
    """Whether an attempt made progress a successor keeps: it saved a step since its
    claim (a ``node.updated`` of the root graph after its ``run.started`` that a resume
    did not recover for an earlier attempt: its writes are in the run's checkpoints; a
    subgraph's steps are not counted), under a durability that saves steps as they
    finish. Under
    ``exit`` LangGraph saves nothing before the graph returns, so a successor starts
    again from the input: steps streamed are not progress, or a run that crashes its
    worker near its end would be given every attempt back, for ever."""
    return saved_a_step and durability != "exit"


def poison_pill(attempts: int) -> str:
    """The reason a run fails whose worker was lost on ``attempts`` counted attempts,
    each without progress: whatever it does crashes (or stalls) the worker that runs it,
    and taking it over again would crash the next one."""
    return (
        f"poison pill: the run lost its worker {attempts} time(s) without progress "
        "(no step saved since its claim)"
    )


def reap(facts: Facts) -> Change:
    """A run whose worker stopped renewing its lease, in a new epoch (the lost worker is
    fenced): a takeover. Whether its attempt counts depends on what the attempt did:

    - it saved a step since its claim (``facts.progressed``): the run was making
      progress, and the worker was lost to something else (starved past its lease,
      killed, its machine gone); the attempt is given back (``attempts`` -1, as a
      release does), and the run is ``queued`` again whatever its attempts;
    - it saved none: the attempt counts (the claim added it), and on the last one the
      run is ``failed`` (error ``worker_lost``, the reason ``poison_pill``): a run that
      loses every worker it is given before it saves anything is stopped.

    ``cancelled`` if it was cancelling. A run that owes work goes back to a worker
    whatever its attempts, with its ending recorded here if the lost worker had not
    recorded it: cancelling, it stays ``cancelling`` with no worker (unless its cancel
    said not to compensate); lost on its last attempt, it is queued to end ``failed``
    once it has compensated. The event (``run.requeued``, ``run.failed`` or
    ``run.cancelled``) says which takeover it was (``takeover``), whether the attempt
    counted (``counted``) and the attempts spent after it (``attempts``)."""
    last = not facts.progressed and facts.attempts >= facts.max_attempts
    ending = facts.ending
    error = facts.error
    if ending is None and facts.status == RunStatus.CANCELLING:
        ask = Ask.of(facts.error)
        if owes(facts, ask):
            ending = ask.ending()
        else:
            error = {"type": "cancelled", "reason": "worker lost while cancelling"}
    elif ending is None and last:
        lost = {
            "type": WORKER_LOST,
            "reason": poison_pill(facts.attempts),
            "attempts": facts.attempts,
        }
        if owes(facts, Ask()):
            ending = {"status": RunStatus.FAILED.value, "error": lost}
        else:
            error = lost
    if ending is None and facts.status == RunStatus.CANCELLING:
        status, kind = RunStatus.CANCELLED, EventType.RUN_CANCELLED
    elif ending is None and last:
        status, kind = RunStatus.FAILED, EventType.RUN_FAILED
    elif facts.status == RunStatus.CANCELLING:  # to do what it owes, then end
        status, kind = RunStatus.CANCELLING, EventType.RUN_REQUEUED
    else:
        status, kind = RunStatus.QUEUED, EventType.RUN_REQUEUED
    # given back only to a run that goes on: a run cancelled here has ended
    given_back = facts.progressed and status != RunStatus.CANCELLED
    takeover = Takeover.PROGRESSED if facts.progressed else Takeover.STALLED
    attempts = facts.attempts - 1 if given_back else facts.attempts
    said: dict[str, Any] = {}
    if status == RunStatus.FAILED:  # as the faces read a failure: its type and message
        said["error"] = {"type": WORKER_LOST, "message": poison_pill(facts.attempts)}
    return Change(
        status,
        ending,
        error,
        _event(
            status,
            kind,
            reason=LOST_REASON,
            attempts=attempts,
            takeover=takeover.value,
            counted=not given_back,
            **said,
        ),
        attempts=-1 if given_back else 0,
        new_epoch=True,
    )


def set_ending(facts: Facts, ending: dict[str, Any]) -> dict[str, Any]:
    """The ending the holder of a run owing work records before it does any (fenced by
    its lease): from then on a released or reaped run goes back to a worker whatever its
    attempts, and whoever claims it does the work and ends it so. A rollback asked by the
    cancel of the run (read from the row as locked: also one the holder had not seen yet
    when it decided) is kept in what is recorded; the holder does what is returned."""
    if facts.status == RunStatus.CANCELLING and Ask.of(facts.error).rollback:
        return {**ending, "rollback": True}
    return ending


# -- a new run on a busy thread (LangGraph's multitask_strategy) ----------------------------


@dataclass(frozen=True, slots=True)
class Busy:
    """One active run of a thread a new run is made on (queued, running, cancelling or
    waiting), as the locked thread shows it: ``asking`` when it waits for a client's
    answer (a human, auth, budget or reconciliation wait)."""

    run_id: str
    status: RunStatus
    asking: bool = False


@dataclass(frozen=True, slots=True)
class Multitask:
    """What a new run does to its thread's active runs: refused (``refused_by``: the run
    that makes the thread busy under ``reject``; nothing else is done), or each run of
    ``cancel`` cancelled as its ``Ask`` says and the LangGraph runs of ``forget`` gone
    for LangGraph's clients (a rollback). The new run then queues behind whatever is
    still active."""

    cancel: tuple[tuple[str, Ask], ...] = ()
    forget: tuple[str, ...] = ()
    refused_by: str | None = None


def multitask(
    strategy: str, busy: Sequence[Busy], *, new_run: str, supersede_reason: str
) -> Multitask:
    """LangGraph's ``multitask_strategy`` for a run ``new_run`` made on a thread whose
    active runs are ``busy`` (decided under the thread's lock, with the new run's insert
    in the same transaction).

    - A run that asks a client something is superseded whatever the strategy (LangGraph
      runs new input on an interrupted thread from its head): cancelled with
      ``Ask.supersede``, its effects kept.
    - A cancelling run is on its way out: the new run queues behind it.
    - Any other active run: ``reject`` refuses the new run; ``interrupt`` cancels it,
      keeping its state and its effects for the new run; ``rollback`` cancels it, undoes
      its effects and puts the thread back where it was before it (its worker does, and
      the new run queues behind it), and its LangGraph runs are gone; ``enqueue`` (and
      any other word) leaves it, the new run queued behind it.
    """
    cancel: list[tuple[str, Ask]] = []
    forget: list[str] = []
    for run in busy:
        if run.status == RunStatus.WAITING and run.asking:
            cancel.append((run.run_id, Ask.supersede(supersede_reason)))
        elif run.status == RunStatus.CANCELLING:
            continue
        elif strategy == "reject":
            return Multitask(refused_by=run.run_id)
        elif strategy in ("interrupt", "rollback"):
            back = strategy == "rollback"
            reason = f"superseded by run {new_run} ({strategy})"
            cancel.append((run.run_id, Ask(reason, compensate=back, rollback=back)))
            if back:
                forget.append(run.run_id)
    return Multitask(tuple(cancel), tuple(forget))
