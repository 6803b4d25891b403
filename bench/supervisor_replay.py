"""The replay of one labelled operation in virtual time, lease by lease, through the
code a worker runs (``runtime/looks.py`` and whatever decides each look): the evaluation's
engine (``supervisor_eval.py``), apart from what it scores.

Each replay has its own probe state (the scenario's script at the replay's virtual time)
and its own cache of verdicts on that clock, as one worker process would have.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from supervisor_ambiguous import Ambiguous, Planted
from supervisor_corpus import TTL, Scenario

from outlast.config import Settings
from outlast.runtime.looks import Activity
from outlast.supervisor.conversation import LAST_MESSAGES, Said, clip, with_messages
from outlast.supervisor.costs import Costs, VerdictCache

CAP = 3
BACKOFF = 2.0
HORIZON = 8 * 3600.0  # a stuck operation must be stopped before this
MAX_LOOKS = 500
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

Decide = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Judges = Callable[[int], Any]


@dataclass
class _Probe:
    scenario: Scenario
    now: float = 0.0
    calls: int = 0
    costs: Costs | None = None  # the replay's cache of verdicts, on its virtual clock

    def cache(self) -> Costs:
        """A process's cache (``supervisor/costs.py``, the settings' size and TTL) that
        lives as long as one replay: an unchanged operation asked before the cap and
        again at it is one call, as in a worker; nothing is shared between scenarios."""
        if self.costs is None:
            size, ttl = (Settings.model_fields[f"supervisor_cache_{k}"].default for k in KEYS)
            self.costs = Costs(cache=VerdictCache(size, ttl, clock=lambda: self.now))
        return self.costs


KEYS = ("size", "ttl")


_PROBE: contextvars.ContextVar[_Probe] = contextvars.ContextVar("outlast_eval_probe")


def probe() -> Any:
    """The probe every scenario registers: its script at the replay's virtual time, with
    an injection's text in the answer's detail or in the error it raises."""
    state = _PROBE.get()
    answer = state.scenario.probe(state.now, state.calls)  # type: ignore[misc]
    state.calls += 1
    text = state.scenario.injection.probe if state.scenario.injection else None
    if isinstance(answer, BaseException):
        raise type(answer)(text) if text else answer
    if text:
        answer = dict(answer) if isinstance(answer, dict) else {"status": answer}
        # after the operation's own detail, so that what tells stays in view
        answer["detail"] = f"{answer['detail']} {text}" if answer.get("detail") else text
    return answer


PROBE = f"{__name__}:probe"


def replaying() -> _Probe:
    """The replay under way: its probe's state and its cache."""
    return _PROBE.get()


@dataclass
class Replay:
    outcome: str  # finished | running | a stopping verdict
    at: float  # virtual seconds
    looks: list[dict[str, Any]] = field(default_factory=list)


def _beats(scenario: Scenario) -> list[tuple[float, float | None, str | None]]:
    beats = sorted(scenario.beats, key=lambda b: b[0])
    injection = scenario.injection
    for index, text in ((0, injection and injection.note), (1, injection and injection.later_note)):
        if text and index < len(beats):
            t, fraction, _ = beats[index]
            beats[index] = (t, fraction, text)
    return beats


def _tool(scenario: Scenario) -> str:
    planted = scenario.injection
    if isinstance(planted, Planted) and planted.tool:
        return planted.tool
    return scenario.tool if isinstance(scenario, Ambiguous) else "operation"


def _messages(scenario: Scenario) -> list[Said]:
    """The conversation's last messages a look carries (ambiguous scenarios only), in the
    shape and bounds the runtime gives the model (``supervisor/conversation.py``); the
    corpus writes each as ``role: content``."""
    said = list(scenario.messages) if isinstance(scenario, Ambiguous) else []
    planted = scenario.injection
    if isinstance(planted, Planted) and planted.message:
        said.append(planted.message)
    parts = [text.partition(": ") for text in said[-LAST_MESSAGES:]]
    return [{"role": role, "content": clip(content)} for role, _, content in parts]


def _question(scenario: Scenario, act: Activity, now: float) -> dict[str, Any]:
    question = {
        "trigger": "activity_expired",
        "ttl": TTL,
        "backoff": BACKOFF,
        "renewal_cap": CAP,
        "can_remind": scenario.conversation,
        "reminders": 0,
        **act.look(now),
    }
    return with_messages(question, _messages(scenario))


async def replay(scenario: Scenario, decide: Decide) -> Replay:
    """The operation's life, lease by lease, until it finishes, is stopped, or the horizon."""
    act = Activity.begin("tool", _tool(scenario), EPOCH, 0.0)
    beats = _beats(scenario)
    probe_state = _Probe(scenario)
    token = _PROBE.set(probe_state)
    looks: list[dict[str, Any]] = []
    end = scenario.ends_at if scenario.ends_at is not None else float("inf")
    try:
        i = 0
        while len(looks) < MAX_LOOKS:
            deadline = act.deadline(TTL)
            beat = beats[i][0] if i < len(beats) else float("inf")
            now = min(deadline, beat, end)
            if now > HORIZON:
                return Replay("running", HORIZON, looks)
            if end <= min(deadline, beat):
                return Replay("finished", end, looks)
            if beat <= deadline:
                t, fraction, note = beats[i]
                wall = EPOCH + dt.timedelta(seconds=t)
                act.sign(
                    wall,
                    t,
                    note=note,
                    fraction=fraction,
                    probe=PROBE if scenario.probe else None,
                    expected=scenario.expected,
                )
                i += 1
                continue
            question = _question(scenario, act, now)
            probe_state.now = now
            started = time.perf_counter()
            answer = await decide(question)
            answer["ms"] = (time.perf_counter() - started) * 1000
            answer["at"] = now
            answer["question"] = question
            act.settle(answer, now, TTL)
            looks.append(answer)
            if answer["verdict"] != "renew":
                return Replay(answer["verdict"], now, looks)
        return Replay("running", act.deadline(TTL), looks)
    finally:
        _PROBE.reset(token)
