"""Undoing a run's effects when it ends ``cancelled`` or ``failed``.

An effect declared with ``@effect(compensate=fn)`` keeps ``fn``'s import path in its
ledger row. When a run that has such effects done ends cancelled or failed (or the
LangGraph face rolls it back, which cancels it), the execution first records how the run
will end (``EffectStore.set_ending``, fenced), then undoes the effects latest first. Each
undoing is a ledger row of its own, keyed ``undo:<effect key>``, so it happens once:

- ``started`` is committed before ``fn`` is called; ``done`` with its result after, then
  ``effect.compensated``. A successor that finds ``done`` does not call it again.
- a crash between the two leaves ``started``: the successor calls ``fn`` again with the
  same key, which is why a compensation must be idempotent under its key (cancelling a
  booking by its id is); this is "retried like an idempotent effect".
- ``fn`` raising is retried (``OUTLAST_COMPENSATION_ATTEMPTS`` calls, backing off from
  ``OUTLAST_COMPENSATION_BACKOFF``), then a person is asked: a ``reconciliation`` wait
  of the runtime's own. ``{"happened": true}`` (undone by hand) records it done,
  ``{"happened": false}`` tries again.

Once the decision is recorded the run never runs its graph again: whoever claims it (after
a crash, a drain or that wait) finishes the compensations and ends it as decided, however
many attempts it has used. An effect that failed, or never started, did not happen and
is not undone. One that was in flight when the run stopped (``started``: its node was
cancelled mid-call, or its worker died; ``unknown``) may have happened: a person is asked
(a ``reconciliation`` wait) whether it did, and with what result; ``{"happened": true,
"result": ...}`` has it undone, ``{"happened": false}`` records that it did not happen.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from outlast import faults
from outlast.importing import resolve
from outlast.jsonable import to_jsonable
from outlast.retry import RetryPolicy
from outlast.runtime import metrics
from outlast.runtime.effects import RECONCILE_SCHEMA
from outlast.runtime.sink import EventSink
from outlast.store import Effect, EffectStore, EventDraft, EventStore, Lease, WaitSpec, WaitStore
from outlast.store.transitions import owed
from outlast.vocabulary import EffectStatus, EventType, WaitKind, WaitStatus

UNDO = "undo:"
# Interrupt ids of the runtime's compensation waits (``runtime/policy.py`` lists them),
# and what each asks: whether an effect in flight happened; whether one that kept failing
# to be undone was undone by hand.
COMPENSATION_WAIT = "compensation:"
IN_FLIGHT = "in_flight"
FAILING = "failing"

BEFORE_CALL = "compensation.before_call"
AFTER_CALL = "compensation.after_call"
AFTER_DONE = "compensation.after_done"


def compensated(effects: Sequence[Effect]) -> list[dict[str, Any]]:
    """What a run's terminal state says was undone, in the order it was."""
    by_key = {e.key: e for e in effects}
    undos = sorted(
        (e for e in effects if e.compensates), key=lambda e: e.finished_at or e.started_at
    )
    return [
        {
            "effect": u.compensates,
            "tool": by_key[u.compensates].tool if u.compensates in by_key else None,
            "by": u.tool,
            "status": u.status,
            "calls": u.calls,
        }
        for u in undos
    ]


def compensation(path: str) -> Callable[..., Any]:
    """The function behind ``module:qualname`` (``nodes.effects.import_path``)."""
    target = resolve(path)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    return target  # type: ignore[no-any-return]


class CompensationStore(EffectStore, WaitStore, EventStore, Protocol):
    """What compensating uses: the ledger, the answers a person gave, the run's log."""


class Compensator:
    """The compensations of one run, done by the worker that holds its lease."""

    def __init__(
        self,
        store: CompensationStore,
        lease: Lease,
        sink: EventSink,
        *,
        attempts: int,
        backoff: float,
        timeout: float,
    ) -> None:
        self._store = store
        self._lease = lease  # an undoing starts only while it is held, as an effect
        self._run_id = lease.run_id
        self._sink = sink
        self._attempts = attempts
        self._retry = RetryPolicy(initial_interval=backoff)
        self._timeout = timeout

    async def run(self) -> list[dict[str, Any]] | WaitSpec:
        """Undo what is owed: the summary for the terminal state, or the wait to park on
        when a compensation kept failing."""
        effects = await self._store.list_effects(self._run_id)
        answers = await self._answers()
        await self._recover_events(effects)
        for effect in owed(effects):
            if effect.status != EffectStatus.DONE:
                said = answers.get((effect.key, IN_FLIGHT))
                if not isinstance(said, dict):
                    return self._ask_in_flight(effect)
                if not said.get("happened"):
                    await self._did_not_happen(effect)
                    continue
                effect = await self._store.effect_finish(
                    self._run_id, effect.key, EffectStatus.DONE, to_jsonable(said.get("result"))
                )
            answer = answers.get((effect.key, FAILING))
            if isinstance(answer, dict) and answer.get("happened"):
                await self._begin(effect)
                await self._done(effect, answer.get("result"), reconciled=True)
                continue
            error = await self._undo(effect)
            if error is not None:
                return self._ask(effect, error)
        return compensated(await self._store.list_effects(self._run_id))

    async def _answers(self) -> dict[tuple[str, str], Any]:
        """What people said, by effect key and question."""
        found: dict[tuple[str, str], Any] = {}
        for wait in await self._store.list_waits(self._run_id, WaitStatus.ANSWERED):
            if wait.interrupt_id.startswith(COMPENSATION_WAIT):
                asked = wait.object or {}
                found[(str(asked.get("effect")), str(asked.get("question")))] = wait.answer
        return found

    async def _did_not_happen(self, effect: Effect) -> None:
        error = "it did not happen, a person said"
        row = await self._store.effect_finish(
            self._run_id, effect.key, EffectStatus.FAILED, error=error
        )
        self._sink.put(
            EventDraft(
                EventType.EFFECT_FAILED,
                {"key": row.key, "tool": row.tool, "status": row.status, "error": error},
            )
        )

    async def _undo(self, effect: Effect) -> str | None:
        """Call the compensation until it is done; the last error if it never was."""
        key = UNDO + effect.key
        row, fresh = await self._begin(effect)
        error: str | None = None
        for attempt in range(self._attempts):
            if attempt:
                await asyncio.sleep(self._retry.delay(attempt))
            if not fresh or attempt:
                row = await self._store.effect_retry(self._run_id, key, self._lease)
            self._event(EventType.EFFECT_STARTED, row, effect, attempt=row.calls)
            faults.fault_point(BEFORE_CALL)
            try:
                # a compensation that never answers must not hold the run for ever
                result = await asyncio.wait_for(self._call(effect, key), self._timeout)
            except Exception as exc:
                error = (
                    f"TimeoutError: no answer in {self._timeout:g} s"
                    if isinstance(exc, TimeoutError)
                    else f"{type(exc).__name__}: {exc}"
                )
                failed = await self._store.effect_finish(
                    self._run_id, key, EffectStatus.FAILED, error=error
                )
                self._event(EventType.EFFECT_FAILED, failed, effect, error=error)
                metrics.COMPENSATIONS.labels(outcome="failed").inc()
                continue
            faults.fault_point(AFTER_CALL)
            await self._done(effect, result)
            return None
        return error

    async def _begin(self, effect: Effect) -> tuple[Effect, bool]:
        key = UNDO + effect.key
        name = _name(effect)
        digest = hashlib.sha256(key.encode()).hexdigest()
        return await self._store.effect_begin(
            self._run_id,
            key,
            name,
            digest,
            {"compensates": effect.key},
            True,
            compensates=effect.key,
            lease=self._lease,
        )

    async def _call(self, effect: Effect, key: str) -> Any:
        assert effect.compensate is not None
        fn = compensation(effect.compensate)
        stored = effect.args if isinstance(effect.args, dict) else {}
        args = list(stored.get("args") or [])
        kwargs = dict(stored.get("kwargs") or {})
        outcome = fn(effect.result, *args, idempotency_key=key, **kwargs)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    async def _done(self, effect: Effect, result: Any, *, reconciled: bool = False) -> None:
        done = await self._store.effect_finish(
            self._run_id, UNDO + effect.key, EffectStatus.DONE, to_jsonable(result)
        )
        # killed here, the event is lost with the process: the successor writes it
        # (``_recover_events``)
        faults.fault_point(AFTER_DONE)
        extra = {"reconciled": True} if reconciled else {}
        metrics.COMPENSATIONS.labels(outcome="by_hand" if reconciled else "done").inc()
        self._event(EventType.EFFECT_COMPENSATED, done, effect, result=done.result, **extra)
        # the event is stored before anything else happens
        await self._sink.flush()

    async def _recover_events(self, effects: Sequence[Effect]) -> None:
        """An undoing recorded done whose ``effect.compensated`` a crash lost (between
        the row and the event): the event is written now, once."""
        done = {e.key: e for e in effects if e.compensates and e.status == EffectStatus.DONE}
        if not done:
            return
        after = 0
        while True:
            page = await self._store.read_events(self._run_id, after, 1000)
            for event in page:
                if event.type == EventType.EFFECT_COMPENSATED:
                    done.pop(str(event.data.get("key")), None)
            if len(page) < 1000:
                break
            after = page[-1].seq
        by_key = {e.key: e for e in effects}
        for undo in done.values():
            original = by_key.get(str(undo.compensates))
            if original is not None:
                self._event(
                    EventType.EFFECT_COMPENSATED, undo, original, result=undo.result, late=True
                )
        await self._sink.flush()

    def _event(self, kind: str, row: Effect, effect: Effect, **extra: Any) -> None:
        data = {
            "key": row.key,
            "tool": row.tool,
            "status": row.status,
            "compensates": effect.key,
            "effect_tool": effect.tool,
            **extra,
        }
        self._sink.put(EventDraft(kind, data))

    def _ask(self, effect: Effect, error: str) -> WaitSpec:
        name = _name(effect)
        return _question(
            effect,
            FAILING,
            {"error": error, "result": effect.result},
            f"Undoing {effect.tool} with {name} failed {self._attempts} time(s) (last: "
            f'{error}). Undo it by hand and answer {{"happened": true}}, or answer '
            '{"happened": false} to try the compensation again.',
        )

    def _ask_in_flight(self, effect: Effect) -> WaitSpec:
        return _question(
            effect,
            IN_FLIGHT,
            {"args": effect.args},
            f"{effect.tool} was in flight when the run stopped, and the run is being "
            f'undone. Did it happen? Answer {{"happened": true, "result": ...}} (its '
            f'result, which {_name(effect)} is given to undo it) or {{"happened": false}}.',
        )


def _name(effect: Effect) -> str:
    """The compensation's function name (its import path is ``module:qualname``)."""
    return (effect.compensate or "").rpartition(":")[2].rpartition(".")[2]


def _question(effect: Effect, question: str, facts: dict[str, Any], prompt: str) -> WaitSpec:
    """A ``reconciliation`` wait of the runtime's own about one effect's undoing."""
    metrics.COMPENSATIONS.labels(outcome="asked").inc()
    return WaitSpec(
        interrupt_id=f"{COMPENSATION_WAIT}{effect.key}:{uuid.uuid4().hex[:8]}",
        kind=WaitKind.RECONCILIATION,
        object={
            "question": question,
            "effect": effect.key,
            "tool": effect.tool,
            "compensation": _name(effect),
            **facts,
        },
        prompt=prompt,
        schema=RECONCILE_SCHEMA,
    )
