"""The cold-path transitions (``outlast/store/transitions.py``) without a database: every
branch of cancel, release, park, reap and set_ending, the one definition of what a run
owes, and what a new run does to its thread's active runs (LangGraph's multitask
strategies). The store contract (tests/store_contract/) holds both backends to what is decided
here; this holds the decisions themselves, case by case."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import pytest

from outlast.store.hub import CONTROL, EVENTS, QUEUE, STATUS
from outlast.store.records import Effect, Run
from outlast.store.transitions import (
    SUPERSEDED,
    Ask,
    Busy,
    Change,
    Facts,
    Multitask,
    cancel,
    compensates,
    multitask,
    outlives_its_thread,
    owed,
    owes,
    park,
    progressed,
    reap,
    release,
    rolls_back,
    set_ending,
)
from outlast.vocabulary import EventType, RunStatus

Q, W, R = RunStatus.QUEUED, RunStatus.WAITING, RunStatus.RUNNING
CING, CED = RunStatus.CANCELLING, RunStatus.CANCELLED
ALL = (EVENTS, CONTROL, QUEUE, STATUS)
ENDS = (EVENTS, QUEUE, STATUS)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
FAILED_ENDING = {"status": "failed", "error": {"type": "Boom", "message": "no"}}


def facts(status: RunStatus, **kw: Any) -> Facts:
    return Facts(status=status, **{"worker_id": "w" if status in (R, CING) else None, **kw})


def cancelled_ending(reason: str, kind: str = "cancelled") -> dict[str, Any]:
    return {"status": "cancelled", "error": {"type": kind, "reason": reason}}


def effect(key: str, status: str, *, at: int = 0, **kw: Any) -> Effect:
    return Effect(
        run_id="r",
        key=key,
        tool="t",
        args_hash="h",
        args={},
        idempotent=True,
        status=status,
        result=None,
        error=None,
        started_at=T0 + dt.timedelta(seconds=at),
        finished_at=T0 + dt.timedelta(seconds=at + 1),
        calls=1,
        **kw,
    )


def event(change: Change) -> tuple[str, dict[str, Any]]:
    return change.event.type, change.event.data


# -- what a run owes -----------------------------------------------------------------------


def test_owed_are_the_declared_effects_that_may_have_happened_and_are_not_undone() -> None:
    effects = [
        effect("done", "done", at=1, compensate="m:undo"),
        effect("failed", "failed", at=2, compensate="m:undo"),  # it did not happen
        effect("plain", "done", at=3),  # nothing undoes it
        effect("flight", "started", at=4, compensate="m:undo"),  # it may have happened
        effect("unknown", "unknown", at=5, compensate="m:undo"),
        effect("undone", "done", at=6, compensate="m:undo"),
        effect("undo:undone", "done", at=7, compensates="undone"),
        effect("retried", "done", at=8, compensate="m:undo"),
        effect("undo:retried", "failed", at=9, compensates="retried"),  # not undone yet
    ]
    assert [e.key for e in owed(effects)] == ["retried", "unknown", "flight", "done"]
    assert owed([]) == []
    assert owed([effects[0], effects[1]]) == [effects[0]]


def test_owes_follows_the_cancels_word_on_compensation() -> None:
    owing, clear = facts(W, effects_owed=True), facts(W)
    assert owes(owing, Ask()) and owes(owing, Ask(compensate=True))
    assert not owes(owing, Ask(compensate=False)) and not owes(clear, Ask())


def test_a_rollback_is_owed_by_a_run_that_ran() -> None:
    back = Ask("undo", rollback=True)
    assert owes(facts(W, ran=True), back) and owes(facts(Q, ran=True), back)
    assert not owes(facts(Q), back)  # never claimed: it wrote nothing to undo
    assert owes(facts(W, ran=True), Ask("undo", compensate=False, rollback=True))
    assert not owes(facts(W, ran=True), Ask("plain"))


def test_facts_of_a_run_and_its_ledger() -> None:
    run = _run(status=W, attempts=1, max_attempts=3, error={"type": "x"}, ending=FAILED_ENDING)
    got = Facts.of(run, [effect("k", "done", compensate="m:u")])
    assert got == Facts(W, None, 1, 3, FAILED_ENDING, {"type": "x"}, effects_owed=True)
    assert not Facts.of(run, [effect("k", "failed", compensate="m:u")]).effects_owed
    assert Facts.of(dataclasses.replace(run, lease_epoch=2), []).ran


def test_what_a_cancel_asked_is_read_back_from_the_error() -> None:
    for ask in (
        Ask("user"),
        Ask("x", compensate=False),
        Ask("y", compensate=True),
        Ask.supersede("new input"),
    ):
        assert Ask.of(ask.error()) == ask
    assert Ask("user").error() == {"type": "cancelled", "reason": "user"}
    assert Ask.supersede("z").error() == {"type": "superseded", "reason": "z", "compensate": False}
    assert Ask.of(None) == Ask.of({}) == Ask("cancelled")
    assert Ask("because").ending() == cancelled_ending("because")
    back = Ask("undo", compensate=True, rollback=True)
    assert Ask.of(back.error()) == back
    assert back.error() == {
        "type": "cancelled",
        "reason": "undo",
        "compensate": True,
        "rollback": True,
    }
    assert back.ending() == {**cancelled_ending("undo"), "rollback": True}
    assert rolls_back(back.ending()) and compensates(back.ending())
    given_up = Ask("undo", compensate=False, rollback=True).ending()
    assert rolls_back(given_up) and not compensates(given_up)
    assert not rolls_back(FAILED_ENDING) and compensates(FAILED_ENDING)


# -- cancel --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [CING, CED, RunStatus.COMPLETED, RunStatus.FAILED])
def test_a_cancel_of_an_ended_or_ending_run_changes_nothing(status: RunStatus) -> None:
    assert cancel(facts(status, effects_owed=True), Ask("user")) is None


def test_a_running_run_is_cancelling_and_its_worker_ends_it() -> None:
    for ending in (None, FAILED_ENDING):  # compensating already: its ending stays
        change = cancel(facts(R, effects_owed=True, ending=ending), Ask("user"))
        assert change is not None
        assert (change.status, change.ending, change.error) == (
            CING,
            ending,
            {"type": "cancelled", "reason": "user"},
        )
        assert change.keep_worker and not change.withdraw_waits and not change.new_epoch
        assert change.attempts == 0 and change.notify == ALL
        assert event(change) == (
            EventType.RUN_CANCELLING,
            {"status": "cancelling", "reason": "user"},
        )


@pytest.mark.parametrize("status", [Q, W])
def test_an_idle_run_owing_nothing_is_cancelled_at_once(status: RunStatus) -> None:
    change = cancel(facts(status), Ask("user"))
    assert change is not None
    assert (change.status, change.ending) == (CED, None)
    assert not change.keep_worker and change.withdraw_waits and change.notify == ALL
    assert event(change) == (EventType.RUN_CANCELLED, {"status": "cancelled", "reason": "user"})


@pytest.mark.parametrize("status", [Q, W])
def test_an_idle_run_owing_compensations_waits_for_a_worker_as_cancelling(
    status: RunStatus,
) -> None:
    change = cancel(facts(status, effects_owed=True), Ask("user"))
    assert change is not None
    assert (change.status, change.ending) == (CING, cancelled_ending("user"))
    assert not change.keep_worker and change.withdraw_waits and change.notify == ALL
    assert event(change) == (EventType.RUN_CANCELLING, {"status": "cancelling", "reason": "user"})


def test_a_queued_run_with_its_ending_recorded_keeps_it() -> None:
    # lost on its last attempt owing compensations: it is queued to end failed
    change = cancel(facts(Q, ending=FAILED_ENDING), Ask("user"))
    assert change is not None and (change.status, change.ending) == (CING, FAILED_ENDING)


def test_a_cancel_while_a_person_settles_a_compensation_gives_the_rest_up() -> None:
    change = cancel(facts(W, ending=FAILED_ENDING, effects_owed=True), Ask("give up"))
    assert change is not None
    assert (change.status, change.ending) == (CED, FAILED_ENDING)
    assert change.withdraw_waits


def test_the_langgraph_faces_cancels() -> None:
    owing = facts(W, effects_owed=True)
    kept = cancel(owing, Ask("interrupted", compensate=False))  # `interrupt` keeps the state
    assert kept is not None and (kept.status, kept.ending) == (CED, None)
    assert kept.error == {"type": "cancelled", "reason": "interrupted", "compensate": False}
    undone = cancel(owing, Ask("rolled back", compensate=True))
    assert undone is not None and undone.status == CING
    assert undone.ending == cancelled_ending("rolled back")
    superseded = cancel(owing, Ask.supersede("new input"))
    assert superseded is not None and superseded.status == CED
    assert superseded.error == {"type": "superseded", "reason": "new input", "compensate": False}


def test_a_rollback_sends_an_idle_run_that_ran_to_a_worker() -> None:
    back = Ask("undo", rollback=True)
    never = cancel(facts(Q), back)  # nothing it wrote: cancelled at once
    assert never is not None and (never.status, never.ending) == (CED, None)
    for status in (Q, W):  # released or parked after a claim: its checkpoints are undone
        change = cancel(facts(status, ran=True), back)
        assert change is not None and change.withdraw_waits and not change.keep_worker
        assert (change.status, change.ending) == (CING, back.ending())
        assert change.error == {"type": "cancelled", "reason": "undo", "rollback": True}
    running = cancel(facts(R, ran=True), back)  # its worker rolls it back as it ends it
    assert running is not None and running.keep_worker and running.status == CING
    assert running.ending is None and running.error == back.error()


def test_a_rollback_joins_an_ending_already_recorded() -> None:
    back = Ask("undo", rollback=True)
    queued = cancel(facts(Q, ran=True, ending=FAILED_ENDING), back)
    assert queued is not None and queued.status == CING
    assert queued.ending == {**FAILED_ENDING, "rollback": True}
    # waiting on a person about a compensation: the rest is given up, the rollback is not
    waiting = cancel(facts(W, ran=True, ending=FAILED_ENDING, effects_owed=True), back)
    assert waiting is not None and waiting.status == CING
    assert waiting.ending == {**cancelled_ending("undo"), "compensate": False, "rollback": True}


# -- release -------------------------------------------------------------------------------


def test_a_released_run_is_queued_and_its_attempt_given_back() -> None:
    for ending in (None, FAILED_ENDING):
        change = release(facts(R, error={"type": "old"}, ending=ending), "shutdown")
        assert (change.status, change.ending, change.error) == (Q, ending, {"type": "old"})
        assert change.attempts == -1 and change.new_epoch and not change.keep_worker
        assert not change.withdraw_waits and change.notify == ENDS
        assert event(change) == (EventType.RUN_RELEASED, {"status": "queued", "reason": "shutdown"})


def test_a_released_cancelling_run_is_cancelled_its_attempt_counted() -> None:
    for owing, ask in ((False, Ask("user")), (True, Ask("user", compensate=False))):
        change = release(facts(CING, error=ask.error(), effects_owed=owing), "shutdown")
        assert (change.status, change.ending, change.attempts) == (CED, None, 0)
        assert change.error == {"type": "cancelled", "reason": "cancelled while draining"}
        assert change.new_epoch and change.notify == ENDS
        assert event(change) == (
            EventType.RUN_CANCELLED,
            {"status": "cancelled", "reason": "shutdown"},
        )


def test_a_released_cancelling_run_that_owes_stays_cancelling_with_its_ending() -> None:
    asked = {"type": "cancelled", "reason": "user"}
    change = release(facts(CING, error=asked, effects_owed=True), "shutdown")
    assert (change.status, change.ending, change.error) == (CING, cancelled_ending("user"), asked)
    assert change.attempts == -1 and change.new_epoch and not change.keep_worker
    assert event(change) == (EventType.RUN_RELEASED, {"status": "cancelling", "reason": "shutdown"})
    # a cancel that said nothing of its kind or reason ends as "cancelled"
    bare = release(facts(CING, effects_owed=True), "shutdown")
    assert bare.ending == cancelled_ending("cancelled")
    # recorded already: kept as it is, whatever the ledger says now
    recorded = release(facts(CING, ending=FAILED_ENDING), "shutdown")
    assert (recorded.status, recorded.ending) == (CING, FAILED_ENDING)


def test_a_rollback_owed_survives_a_release() -> None:
    asked = Ask("undo", rollback=True).error()
    change = release(facts(CING, ran=True, error=asked), "shutdown")
    assert (change.status, change.ending) == (CING, {**cancelled_ending("undo"), "rollback": True})
    assert change.attempts == -1 and change.error == asked


# -- park ----------------------------------------------------------------------------------


def _parked(change: Change, ending: dict[str, Any] | None, error: dict[str, Any] | None) -> None:
    """What every park does: the run given back, its attempt with it, in a new epoch."""
    assert (change.ending, change.error) == (ending, error)
    assert change.attempts == -1 and change.new_epoch and not change.keep_worker


def test_a_parked_run_waits_unless_an_answer_is_there() -> None:
    for ending in (None, FAILED_ENDING):  # ending: parked on a compensation's question
        for status in (R, CING) if ending else (R,):
            waiting = park(facts(status, ending=ending), answered=False, waits=2, kinds=["b", "a"])
            _parked(waiting, ending, None)
            assert waiting.status == W and not waiting.withdraw_waits
            assert waiting.notify == (EVENTS, STATUS)  # nothing became claimable
            data = {"status": "waiting", "waits": 2, "kinds": ["a", "b"]}
            assert event(waiting) == (EventType.RUN_WAITING, data)
            queued = park(facts(status, ending=ending), answered=True, waits=1, kinds=["a"])
            _parked(queued, ending, None)
            assert queued.status == Q and queued.notify == ENDS
            data = {"status": "queued", "reason": "answered before it waited"}
            assert event(queued) == (EventType.RUN_QUEUED, data)


def test_a_run_cancelled_before_it_parked_is_cancelled() -> None:
    for owing, ask in ((False, Ask("user")), (True, Ask("user", compensate=False))):
        change = park(
            facts(CING, error=ask.error(), effects_owed=owing), answered=True, waits=1, kinds=["a"]
        )
        _parked(change, None, ask.error())  # the cancel's error kept
        assert change.status == CED and change.withdraw_waits and change.notify == ENDS
        data = {"status": "cancelled", "reason": "cancelled while running"}
        assert event(change) == (EventType.RUN_CANCELLED, data)


def test_a_run_cancelled_before_it_parked_owing_work_waits_for_a_worker() -> None:
    for asked, owing, ran, ending in (
        (Ask("user"), True, False, cancelled_ending("user")),
        (Ask("undo", rollback=True), False, True, {**cancelled_ending("undo"), "rollback": True}),
    ):
        change = park(
            facts(CING, error=asked.error(), effects_owed=owing, ran=ran),
            answered=False,
            waits=1,
            kinds=["a"],
        )
        _parked(change, ending, asked.error())
        assert change.status == CING and change.withdraw_waits and change.notify == ENDS
        data = {"status": "cancelling", "reason": "cancelled while running"}
        assert event(change) == (EventType.RUN_RELEASED, data)


# -- reap ----------------------------------------------------------------------------------

STALLED = "lease_expired_without_progress"
PROGRESSED = "lease_expired_with_progress"
POISON = (
    "poison pill: the run lost its worker {} time(s) without progress"
    " (no step saved since its claim)"
)


def _lost(
    change: Change,
    status: RunStatus,
    kind: str,
    attempts: int,
    *,
    progressed: bool = False,
    given_back: bool = False,
) -> None:
    data: dict[str, Any] = {
        "status": status.value,
        "reason": "worker lease expired",
        "attempts": attempts,
        "takeover": PROGRESSED if progressed else STALLED,
        "counted": not given_back,
    }
    if status == RunStatus.FAILED:
        data["error"] = {"type": "worker_lost", "message": POISON.format(attempts)}
    assert change.status == status and event(change) == (kind, data)
    assert change.new_epoch and not change.keep_worker
    assert change.attempts == (-1 if given_back else 0)
    assert not change.withdraw_waits and change.notify == ENDS


def test_a_lost_run_is_requeued_while_it_has_attempts() -> None:
    for owing in (False, True):  # owing, it is retried as any other: its graph goes on
        change = reap(facts(R, attempts=1, max_attempts=3, error={"x": 1}, effects_owed=owing))
        _lost(change, Q, EventType.RUN_REQUEUED, 1)
        assert (change.ending, change.error) == (None, {"x": 1})


def test_a_lost_run_fails_on_its_last_attempt_as_a_poison_pill() -> None:
    change = reap(facts(R, attempts=3, max_attempts=3))
    _lost(change, RunStatus.FAILED, EventType.RUN_FAILED, 3)
    assert change.ending is None
    assert change.error == {"type": "worker_lost", "reason": POISON.format(3), "attempts": 3}


def test_a_run_that_saved_a_step_since_its_claim_gets_its_attempt_back() -> None:
    """A worker lost while its run made progress (starved past its lease, killed, its
    machine gone) is not the run's failure: the attempt is given back, on the last one
    too, and the event says which takeover it was."""
    for attempts, max_attempts in ((1, 3), (2, 2), (5, 1)):
        change = reap(facts(R, attempts=attempts, max_attempts=max_attempts, progressed=True))
        _lost(change, Q, EventType.RUN_REQUEUED, attempts - 1, progressed=True, given_back=True)
        assert (change.ending, change.error) == (None, None)


def test_a_run_that_saved_no_step_counts_the_attempt() -> None:
    change = reap(facts(R, attempts=1, max_attempts=2, progressed=False))
    _lost(change, Q, EventType.RUN_REQUEUED, 1)


def test_progress_is_a_step_saved_under_a_durability_that_saves_steps() -> None:
    assert progressed(True, "sync") and progressed(True, "async")
    assert not progressed(False, "sync")
    # under exit nothing is saved before the graph returns: a successor starts over
    assert not progressed(True, "exit")


def test_a_run_lost_on_its_last_attempt_owing_compensations_is_queued_to_end_failed() -> None:
    change = reap(facts(R, attempts=2, max_attempts=2, effects_owed=True))
    _lost(change, Q, EventType.RUN_REQUEUED, 2)
    assert change.error is None and change.ending == {
        "status": "failed",
        "error": {"type": "worker_lost", "reason": POISON.format(2), "attempts": 2},
    }
    # with progress, it is not its last attempt: its graph goes on, nothing recorded
    again = reap(facts(R, attempts=2, max_attempts=2, effects_owed=True, progressed=True))
    _lost(again, Q, EventType.RUN_REQUEUED, 1, progressed=True, given_back=True)
    assert again.ending is None


def test_a_lost_run_with_its_ending_recorded_goes_back_whatever_its_attempts() -> None:
    queued = reap(facts(R, attempts=5, max_attempts=1, ending=FAILED_ENDING))
    _lost(queued, Q, EventType.RUN_REQUEUED, 5)
    cancelling = reap(facts(CING, attempts=5, max_attempts=1, ending=FAILED_ENDING))
    _lost(cancelling, CING, EventType.RUN_REQUEUED, 5)
    assert queued.ending == cancelling.ending == FAILED_ENDING
    assert queued.error is None


def test_a_run_lost_while_cancelling() -> None:
    plain = reap(facts(CING, attempts=1, max_attempts=3, error=Ask("user").error()))
    _lost(plain, CED, EventType.RUN_CANCELLED, 1)
    assert plain.ending is None
    assert plain.error == {"type": "cancelled", "reason": "worker lost while cancelling"}
    owing = reap(facts(CING, attempts=1, error=Ask("user").error(), effects_owed=True))
    _lost(owing, CING, EventType.RUN_REQUEUED, 1)  # no worker: the claim hands it on
    assert (owing.ending, owing.error) == (cancelled_ending("user"), Ask("user").error())
    # the cancel said not to compensate: nothing is owed
    kept = Ask("interrupted", compensate=False).error()
    told = reap(facts(CING, attempts=1, error=kept, effects_owed=True))
    _lost(told, CED, EventType.RUN_CANCELLED, 1)
    # an attempt that progressed is not given back to a run that ends here
    ended = reap(facts(CING, attempts=1, error=Ask("user").error(), progressed=True))
    _lost(ended, CED, EventType.RUN_CANCELLED, 1, progressed=True)
    # one that goes back to a worker to do what it owes gets it back
    back = reap(
        facts(CING, attempts=1, error=Ask("user").error(), effects_owed=True, progressed=True)
    )
    _lost(back, CING, EventType.RUN_REQUEUED, 0, progressed=True, given_back=True)


def test_a_rollback_owed_survives_a_reap() -> None:
    asked = Ask("undo", rollback=True).error()
    change = reap(facts(CING, ran=True, attempts=3, max_attempts=3, error=asked))
    _lost(change, CING, EventType.RUN_REQUEUED, 3)
    assert change.ending == {**cancelled_ending("undo"), "rollback": True}


# -- set_ending ----------------------------------------------------------------------------


def test_set_ending_records_what_the_holder_decided() -> None:
    assert set_ending(facts(R, effects_owed=True), FAILED_ENDING) == FAILED_ENDING
    plain = facts(CING, error=Ask("user").error())
    assert set_ending(plain, FAILED_ENDING) == FAILED_ENDING


def test_set_ending_keeps_a_rollback_the_cancel_asked() -> None:
    # the run failed on its own as a cancel with rollback came in: it is rolled back too
    asked = facts(CING, ran=True, error=Ask("undo", rollback=True).error())
    assert set_ending(asked, FAILED_ENDING) == {**FAILED_ENDING, "rollback": True}


def _run(**changes: Any) -> Run:
    base = Run(
        id="r",
        pos=1,
        principal="",
        thread_id="t",
        graph="g",
        status=Q,
        input=None,
        config={},
        metadata={},
        budget=None,
        idempotency_key=None,
        fingerprint="f",
        attempts=0,
        max_attempts=3,
        worker_id=None,
        lease_epoch=0,
        lease_expires_at=None,
        last_seq=1,
        result=None,
        error=None,
        created_at=T0,
        updated_at=T0,
    )
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (facts(R, effects_owed=True), True),
        (facts(W, effects_owed=True), True),
        (facts(Q, effects_owed=True), True),
        (facts(R), False),
        (facts(W), False),
        (facts(CING, ending={"status": "cancelled", "error": {}}), True),  # undoing now
        (facts(CING, ending={"status": "cancelled", "compensate": False}), False),
        (facts(CING), False),
        (facts(CED, effects_owed=True), False),  # ended: nothing left to do
    ],
)
def test_a_run_outlives_its_deleted_thread_only_to_undo_what_it_did(
    given: Facts, kept: bool
) -> None:
    assert outlives_its_thread(given) is kept


# -- a new run on a busy thread (multitask_strategy) ----------------------------------------

NEW = "new"
INPUT = "new input on the thread"
STRATEGIES = ("reject", "interrupt", "rollback", "enqueue")


def _decide(strategy: str, *busy: Busy) -> Multitask:
    return multitask(strategy, busy, new_run=NEW, supersede_reason=INPUT)


def _superseded_by(strategy: str) -> str:
    return f"superseded by run {NEW} ({strategy})"


# strategy -> what it does to one active run that asks nothing (queued, running, or
# waiting on its own: a timer, a provider)
ONE_ACTIVE = {
    "reject": Multitask(refused_by="a"),
    # the new run goes on from the state the cancelled one left, its effects kept
    "interrupt": Multitask(cancel=(("a", Ask(_superseded_by("interrupt"), compensate=False)),)),
    # the thread goes back to before the run, its effects undone, its LangGraph run gone
    "rollback": Multitask(
        cancel=(("a", Ask(_superseded_by("rollback"), compensate=True, rollback=True)),),
        forget=("a",),
    ),
    "enqueue": Multitask(),  # the new run queues behind it
}


@pytest.mark.parametrize("status", [Q, R, W])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_multitask_on_one_active_run(strategy: str, status: RunStatus) -> None:
    assert _decide(strategy, Busy("a", status)) == ONE_ACTIVE[strategy]


@pytest.mark.parametrize("strategy", [*STRATEGIES, "anything else"])
def test_an_idle_thread_takes_a_new_run_whatever_the_strategy(strategy: str) -> None:
    assert _decide(strategy) == Multitask()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_run_that_asks_is_superseded_whatever_the_strategy(strategy: str) -> None:
    decided = _decide(strategy, Busy("a", W, asking=True))
    assert decided == Multitask(cancel=(("a", Ask.supersede(INPUT)),))
    (_, ask), *_ = decided.cancel
    assert ask.kind == SUPERSEDED and ask.compensate is False and not ask.rollback


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_cancelling_run_is_left_to_end_whatever_the_strategy(strategy: str) -> None:
    assert _decide(strategy, Busy("a", CING)) == Multitask()


def test_reject_refuses_even_with_a_run_to_supersede_and_does_nothing_else() -> None:
    # the refusal is the whole answer: the asking run is not superseded either
    decided = _decide("reject", Busy("a", W, asking=True), Busy("b", R), Busy("c", Q))
    assert decided == Multitask(refused_by="b")
    assert _decide("reject", Busy("a", W, asking=True), Busy("b", CING)) == Multitask(
        cancel=(("a", Ask.supersede(INPUT)),)
    )


def test_every_active_run_is_handled_in_order() -> None:
    busy = (Busy("a", W, asking=True), Busy("b", CING), Busy("c", R), Busy("d", Q))
    assert _decide("rollback", *busy) == Multitask(
        cancel=(
            ("a", Ask.supersede(INPUT)),
            ("c", Ask(_superseded_by("rollback"), compensate=True, rollback=True)),
            ("d", Ask(_superseded_by("rollback"), compensate=True, rollback=True)),
        ),
        forget=("c", "d"),  # not the superseded one: its LangGraph run had ended
    )
    assert _decide("interrupt", *busy).forget == ()
    assert _decide("enqueue", *busy) == Multitask(cancel=(("a", Ask.supersede(INPUT)),))
    assert _decide("anything else", *busy) == _decide("enqueue", *busy)
