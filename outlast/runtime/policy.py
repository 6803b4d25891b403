"""The budget and the supervisor, for one execution of one run.

``Execution`` runs the graph; at the few points where the run's budget or the supervisor
has a say it asks a ``RunPolicy`` and does what the answer says (an ``Action``: complete
with the best result, park on a wait, or give the run back to the queue):

- every stream part: ``observe`` counts usage and says when a limit is reached (the
  execution then drains to the next step boundary);
- the graph stopped at that boundary: ``at_budget_stop`` (hard cap → close; soft limit →
  the supervisor's automatic tranche, or a ``budget`` wait for a person);
- an activity lease expired: ``on_activity_expired`` asks the ladder
  (``supervisor/ladder.py``), with the run's conversation for its model (read from the
  latest checkpoint only when the model is asked), logs its verdict and, when the verdict
  stops the node, asks the execution to stop; ``after_supervisor_stop`` then says what
  follows;
- resuming: ``on_resume`` applies what a person answered at a runtime checkpoint,
  ``take_note`` hands over a supervisor message left for this attempt.

The decisions themselves are pure (``supervisor/decisions.py``, ``runtime/budget.py``);
this module reads and writes what they need: the run's limits, its public usage, and the
supervisor's memory of the run (``runs.supervision``, never part of the usage).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, cast

from langchain_core.runnables import RunnableConfig

from outlast.config import Settings
from outlast.runtime import metrics
from outlast.runtime.budget import Breach, BudgetMeter, Limits, granted, tranche_schema, with_soft
from outlast.runtime.compensation import COMPENSATION_WAIT
from outlast.runtime.credentials import CREDENTIAL_WAIT
from outlast.runtime.outcomes import SUPERVISOR
from outlast.runtime.sink import EventSink, SinkClosed
from outlast.store import ActivityStore, EventDraft, Lease, Run, Wait, WaitSpec, WaitStore
from outlast.supervisor import conversation, costs, decisions
from outlast.supervisor import evidence as ev
from outlast.supervisor.decisions import StopDecision, Supervision
from outlast.supervisor.extension import Bounds
from outlast.supervisor.ladder import SupervisorState, supervisor
from outlast.vocabulary import EventType, Verdict, WaitKind, WaitStatus

# Interrupt ids of the runtime's own waits (not LangGraph interrupts): the runtime, not
# the graph, reads their answers.
SUPERVISOR_WAIT = "supervisor:"
BUDGET_WAIT = "budget:"

_NO_COST: dict[str, float] = {"model_calls": 0, "tokens": 0}


def asks_for_the_runtime(wait: Wait) -> bool:
    """A wait the runtime opened itself (a supervisor escalation, a budget checkpoint, a
    credential, a compensation that kept failing), not a LangGraph interrupt: no
    checkpoint shows it, so a face that shows interrupts shows these from the wait."""
    return wait.interrupt_id.startswith(
        (SUPERVISOR_WAIT, BUDGET_WAIT, CREDENTIAL_WAIT, COMPENSATION_WAIT)
    )


@dataclass(frozen=True, slots=True)
class Complete:
    """Complete the run with its best result, closed early for this reason."""

    partial: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Park:
    spec: WaitSpec


@dataclass(frozen=True, slots=True)
class Release:
    """Back to the queue; the next attempt goes on from the last checkpoint."""

    reason: str  # for the store's ``run.released``
    detail: str  # for the worker's log and metrics


Action = Complete | Park | Release


@dataclass(frozen=True, slots=True)
class Answer:
    """What a person's answer at a runtime checkpoint does: close the run (``closed``) or
    consume the wait with these limits."""

    closed: dict[str, Any] | None = None
    limits: Limits | None = None


def read_answer(wait: Wait, limits: Limits) -> Answer | None:
    """None: not a runtime checkpoint's wait (a graph interrupt's answer goes to the graph)."""
    if wait.interrupt_id.startswith(CREDENTIAL_WAIT):
        # the credential is the run's, sealed in the wait (``runtime/credentials.py``):
        # consumed here, the node that asked runs again and finds it
        return Answer(limits=limits)
    if wait.interrupt_id.startswith(SUPERVISOR_WAIT):
        if wait.answer == "close":
            return Answer(
                closed={
                    "closed_by": "a person",
                    "after": "supervisor escalation",
                    **(wait.object or {}),
                }
            )
        return Answer(limits=limits)  # retry: the limits stay, the wait is consumed
    if wait.kind != WaitKind.BUDGET or not isinstance(wait.answer, dict):
        return None
    dim = str((wait.object or {}).get("dimension"))
    if wait.answer.get("action") == "close" or dim not in limits:
        return Answer(closed={"level": "soft", "dimension": dim, "closed_by": "a person"})
    return Answer(limits=granted(limits, dim, float(wait.answer.get("tranche", 0))))


class PolicyStore(ActivityStore, WaitStore, Protocol):
    """What the policy uses: the run's usage, memory and budget, and the answers to them."""


class RunPolicy:
    def __init__(
        self,
        store: PolicyStore,
        lease: Lease,
        settings: Settings,
        run: Run,
        *,
        stop: Callable[[str], None],
        can_remind: Callable[[], bool],
        spending: costs.Costs | None = None,
        values: Callable[[], Awaitable[Any]] | None = None,
    ) -> None:
        self._store = store
        # the process's call budget and verdict cache, unless a test brings its own
        self._costs = spending or costs.for_process(settings)
        self._lease = lease
        self._settings = settings
        self._stop = stop
        self._can_remind = can_remind
        self._values = values  # the run's state at its latest checkpoint
        self.meter = BudgetMeter(run.budget, run.usage, settings.model_prices)
        self.memory = Supervision.of(run.supervision)
        self._saved = self.memory
        self.breach: Breach | None = None
        self.stopped: StopDecision | None = None
        self._sink: EventSink | None = None

    def attach(self, sink: EventSink) -> None:
        self._sink = sink

    @property
    def usage(self) -> Callable[[], dict[str, Any]] | None:
        """What the activity tracker writes with each snapshot, for a budgeted run."""
        return self.meter.usage if self.meter.limits else None

    # -- while the graph streams --------------------------------------------------------

    def observe(self, part: dict[str, Any]) -> bool:
        """True once, when a limit is first reached: stop at the next step boundary."""
        if not self.meter.limits:
            return False
        self.meter.on_part(part)
        if self.breach is None:
            self.breach = self.meter.breach()
            return self.breach is not None
        return False

    async def on_activity_expired(self, look: dict[str, Any]) -> dict[str, Any]:
        """The ladder's answer on an expired activity lease, logged; a verdict that stops
        the node asks the execution to stop (``after_supervisor_stop`` follows)."""
        question: SupervisorState = {
            "trigger": decisions.ACTIVITY_EXPIRED,
            "ttl": self._settings.activity_lease_ttl,
            "backoff": self._settings.supervisor_backoff,
            "renewal_cap": self._settings.supervisor_renewal_cap,
            "early_look_from": self._settings.supervisor_early_look_from,
            "can_remind": self._can_remind(),
            "reminders": self.memory.reminders,
            "run_extended_for": self.memory.extended_for,
            "run_model_calls": self.memory.model_calls,
            "max_calls_per_run": self._settings.supervisor_max_calls_per_run,
            "extension_bounds": asdict(Bounds.of_settings(self._settings)),
            **look,  # type: ignore[typeddict-item]
        }
        asking = {"supervisor_costs": self._costs, "supervisor_conversation": self._conversation}
        config: RunnableConfig = {"configurable": asking}
        state = dict(await supervisor.ainvoke(question, config))
        await self._spent(state)
        verdict = cast(Verdict, state.get("verdict", "renew"))
        kept = ("evidence", "lease_for", "advice", "model_call", "judge")
        extra = {k: state[k] for k in kept if k in state}
        self._log_verdict(
            decisions.ACTIVITY_EXPIRED,
            verdict,
            state.get("reason", ""),
            tier=state.get("tier"),
            cost=state.get("cost") or _NO_COST,
            activity=look["activity"]["name"],
            **extra,
        )
        verdict = decisions.acted_verdict(verdict, self._can_remind())
        if verdict in decisions.STOPPING:
            self.stopped = StopDecision(verdict, look["activity"], state.get("reason", ""))
            self._stop(SUPERVISOR)
        return {**state, "verdict": verdict}

    async def _conversation(self) -> list[conversation.Said]:
        """The conversation's last messages, for a question the model gets (``costs.ask``
        reads them then): a checkpoint read, never made for a look the model does not get."""
        if self._values is None or not self._can_remind():
            return []  # no ``messages`` channel: no conversation to quote
        return await conversation.read(self._values)

    async def _spent(self, state: dict[str, Any]) -> None:
        """What the look spent of the run's bounds: they must hold across attempts and
        workers, so they are kept with the run."""
        memory = self.memory
        if state.get("evidence") == ev.EXTENSION:
            spent = memory.extended_for + float(state["lease_for"])
            memory = replace(memory, extended_for=spent)
        cost = state.get("cost") or _NO_COST
        if cost.get("model_calls"):
            calls = memory.model_calls + int(cost["model_calls"])
            memory = replace(memory, model_calls=calls)
        if "model_call" in state:
            metrics.supervisor_model_call(state["model_call"], cost)
        if memory != self.memory:
            self.memory = memory
            await self.record()

    # -- when the graph has stopped -----------------------------------------------------

    async def at_budget_stop(self, breach: dict[str, Any], values: Any) -> Action:
        """The graph stopped at a step boundary on ``breach`` (or a person closed it at a
        checkpoint: ``closed_by``); ``values`` is its best result."""
        if "closed_by" in breach:
            await self.record(partial=breach)
            return Complete(breach)
        metrics.BUDGET_CHECKPOINTS.labels(
            level=str(breach.get("level")), dimension=str(breach.get("dimension"))
        ).inc()
        self._put(EventDraft(EventType.BUDGET_CHECKPOINT, {**breach, "usage": self.meter.usage()}))
        await self._flush()
        if breach["level"] == "hard":
            await self.record(partial=breach)
            return Complete(breach)
        return await self._at_soft_limit(breach, values)

    async def _at_soft_limit(self, breach: dict[str, Any], values: Any) -> Action:
        dim = breach["dimension"]
        limit = dict(self.meter.limits[dim])
        decision = decisions.at_soft_limit(
            self.memory,
            dimension=dim,
            limits=self.meter.limits,
            values=values,
            allowed=self._settings.budget_auto_tranches,
            can_remind=self._can_remind(),
        )
        self.memory = decision.state
        if decision.verdict is not None:
            self._log_verdict(decisions.BUDGET_SOFT, decision.verdict, decision.reason)
        if decision.raise_to is not None:
            limits = with_soft(self.meter.limits, dim, decision.raise_to)
            await self._store.apply_budget(self._lease, limits, None)
            self.meter.limits = limits
        await self._flush()  # the verdict is logged before the run is released or parked
        if decision.closed is not None:
            await self.record(partial=decision.closed)
            return Complete(decision.closed)
        await self.record()
        if decision.raise_to is not None:
            return Release("budget tranche granted by the supervisor", "tranche")
        return Park(
            WaitSpec(
                interrupt_id=f"{BUDGET_WAIT}{dim}:{uuid.uuid4().hex[:8]}",
                kind=WaitKind.BUDGET,
                object={"dimension": dim, "used": breach["used"], **limit},
                prompt=(
                    f"The run reached its soft limit of {dim} ({breach['used']:g} of "
                    f"{breach['limit']:g}). Continue with a tranche, or close with the best "
                    "result?"
                ),
                schema=tranche_schema(limit, dim),
            )
        )

    async def after_supervisor_stop(self, values: Any) -> Action:
        """The node in flight was cancelled on the supervisor's verdict; ``values`` is the
        state of the last checkpoint."""
        decision = self.stopped
        assert decision is not None
        if decision.verdict in decisions.REMINDING:
            # A message for the next attempt of the stopped node; it goes on from the
            # last checkpoint with it.
            note = decisions.reminder(decision, decisions.goal_of(values))
            self.memory = replace(self.memory, note=note, reminders=self.memory.reminders + 1)
            await self.record()
            return Release(f"supervisor: {decision.verdict}", decision.verdict)
        if decision.verdict == "close":
            closed = {
                "closed_by": "supervisor",
                "activity": decision.name,
                "reason": decision.reason,
            }
            await self.record(partial=closed)
            return Complete(closed)
        silent = decision.activity.get("silent_for")
        return Park(
            WaitSpec(
                interrupt_id=f"{SUPERVISOR_WAIT}{uuid.uuid4().hex[:8]}",
                kind=WaitKind.HUMAN,
                object={"activity": decision.name, "reason": decision.reason},
                prompt=(
                    f"{decision.name} went silent ({silent} s without a sign of life) and "
                    "the supervisor stopped it. Retry it from the last checkpoint, or close "
                    "the run with the best result?"
                ),
                schema={"enum": ["retry", "close"]},
            )
        )

    # -- resuming -----------------------------------------------------------------------

    async def on_resume(self) -> dict[str, Any] | None:
        """Apply what a person decided at a runtime checkpoint: a tranche raises the soft
        limit (and consumes its wait in the same transaction); ``retry`` consumes the
        wait; a ``close`` is returned: the run ends with its best result."""
        for wait in await self._store.list_waits(self._lease.run_id, WaitStatus.ANSWERED):
            answer = read_answer(wait, self.meter.limits)
            if answer is None:
                continue
            if answer.closed is not None:
                return answer.closed
            assert answer.limits is not None
            await self._store.apply_budget(self._lease, answer.limits, wait.id)
            self.meter.limits = answer.limits
        return None

    async def take_note(self) -> str | None:
        """The supervisor message left for this attempt, consumed: never fed twice."""
        note = self.memory.note
        if note is not None:
            self.memory = replace(self.memory, note=None)
            await self.record()
        return note

    # -- what is kept -------------------------------------------------------------------

    async def record(self, partial: dict[str, Any] | None = None) -> None:
        """The supervisor's memory, when it changed; the usage (when the run has a budget)
        and, when a budget or the supervisor closed the run, why its result is partial."""
        if self.memory != self._saved:
            await self._store.set_supervision(self._lease, self.memory.to_json())
            self._saved = self.memory
        if self.meter.limits or partial is not None:
            usage: dict[str, Any] = self.meter.usage() if self.meter.limits else {}
            if partial is not None:
                usage["partial"] = partial
            await self._store.set_activity(self._lease, None, usage)

    def _log_verdict(
        self,
        trigger: str,
        verdict: str,
        reason: str,
        *,
        tier: int | None = 1,
        cost: dict[str, float] | None = None,
        activity: str | None = None,
        **extra: Any,
    ) -> None:
        metrics.SUPERVISOR_VERDICTS.labels(tier=str(tier), verdict=verdict).inc()
        data: dict[str, Any] = {"trigger": trigger}
        if activity is not None:
            data["activity"] = activity
        data.update(tier=tier, verdict=verdict, reason=reason, cost=cost or _NO_COST, **extra)
        self._put(EventDraft(EventType.SUPERVISOR_VERDICT, data))

    def _put(self, draft: EventDraft) -> None:
        if self._sink is not None:
            with contextlib.suppress(SinkClosed):
                self._sink.put(draft)

    async def _flush(self) -> None:
        if self._sink is not None:
            await self._sink.flush()
