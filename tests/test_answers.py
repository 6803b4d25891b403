"""Which waits an answer goes to (``service/answers.py``), without a server: LangGraph's
``Command(resume=…)`` read as the run service reads it for every face that brings one
(the LangGraph face, protocol v2), with LangGraph's server's own refusals."""

from __future__ import annotations

import datetime as dt

import pytest

from outlast.errors import WaitNotOpen, WhichWait
from outlast.service.answers import resumed_waits
from outlast.store import Wait

A = "a" * 32  # interrupt ids as LangGraph makes them: 32 hex digits
B = "b" * 32
C = "c" * 32


def _wait(wait_id: str, interrupt_id: str) -> Wait:
    now = dt.datetime.now(dt.UTC)
    return Wait(
        id=wait_id, run_id="r1", interrupt_id=interrupt_id, kind="human", status="open",
        object=None, prompt=None, schema=None, event_keys=None, has_default=False,
        default=None, probe=None, answer=None, answered_how=None, since=now,
        last_signal_at=None, lease_expires_at=None, wake_at=None, renewals=0, failures=0,
        answered_at=None,
    )  # fmt: skip


ONE = [_wait("w1", A)]
TWO = [_wait("w1", A), _wait("w2", B)]


@pytest.mark.parametrize("strict", [False, True])
def test_a_single_value_answers_the_only_wait(strict: bool) -> None:
    assert resumed_waits("yes", ONE, strict) == {"w1": "yes"}
    # a map that names no pending interrupt is the value itself (a graph may ask for one)
    assert resumed_waits({"approved": True}, ONE, strict) == {"w1": {"approved": True}}
    assert resumed_waits({}, ONE, strict) == {"w1": {}}
    assert resumed_waits(None, ONE, strict) == {"w1": None}


@pytest.mark.parametrize("strict", [False, True])
def test_a_map_by_interrupt_id_answers_each_wait_it_names(strict: bool) -> None:
    assert resumed_waits({A: 1, B: 2}, TWO, strict) == {"w1": 1, "w2": 2}
    assert resumed_waits({B: "only b"}, TWO, strict) == {"w2": "only b"}
    assert resumed_waits({A: {B: "nested"}}, TWO, strict) == {"w1": {B: "nested"}}


def test_a_map_that_also_names_interrupts_not_pending() -> None:
    # LangGraph's server takes the pending ones and drops the rest, unless strict_resume
    assert resumed_waits({A: 1, C: 3}, TWO, strict=False) == {"w1": 1}
    with pytest.raises(WaitNotOpen) as refused:
        resumed_waits({A: 1, C: 3}, TWO, strict=True)
    assert str(refused.value) == (
        f"resume names interrupts that are not pending: ['{C}']; pending: ['{A}', '{B}']"
    )
    assert refused.value.status == 409


def test_a_map_of_ids_none_of_them_pending() -> None:
    # without strict_resume it is a value, given to the only wait
    assert resumed_waits({C: 3}, ONE, strict=False) == {"w1": {C: 3}}
    with pytest.raises(WaitNotOpen, match=r"resume names interrupts that are not pending"):
        resumed_waits({C: 3}, ONE, strict=True)
    # keys that are not interrupt ids are a value, strict or not
    assert resumed_waits({"C": 3}, ONE, strict=True) == {"w1": {"C": 3}}


@pytest.mark.parametrize("strict", [False, True])
def test_a_value_that_names_no_wait_is_refused_when_several_ask(strict: bool) -> None:
    with pytest.raises(WhichWait) as refused:
        resumed_waits("yes", TWO, strict)
    assert str(refused.value) == (
        "When there are multiple pending interrupts, you must specify the interrupt id "
        f"when resuming. Pending: ['{A}', '{B}']"
    )
    assert refused.value.status == 409
    with pytest.raises(WhichWait):
        resumed_waits({"approved": True}, TWO, strict)
