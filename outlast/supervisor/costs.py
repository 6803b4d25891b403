"""What the semantic tier may spend (issue 33): model calls per run and per process, and a
cache of verdicts per operation state.

The model is asked only past the renewal cap (``ladder.semantic``), but a deployment with
thousands of runs, or one run whose operations keep stalling, could still make many
calls. Three bounds keep the price the operator's choice:

- per run (``OUTLAST_SUPERVISOR_MAX_CALLS_PER_RUN``): the count lives in the run's
  ``Supervision`` with the extensions' total, so a resumed run, on any worker, goes on
  from what it already spent;
- per process (``OUTLAST_SUPERVISOR_MAX_CALLS_PER_MINUTE``): a token bucket that holds
  one minute's calls and refills at that rate. A mass expiry (a provider outage stalls
  every run at once) spends the bucket at once and then gets a steady trickle, and the
  state is two numbers whatever the rate; a sliding window would bound the same calls
  but keep a timestamp per call;
- a cache of verdicts, keyed by what the judge is shown with its clocks on a coarse
  scale: many runs stalled on the same rate limit, with the same notes, are one
  question. The clocks (silence, elapsed time, the count of heartbeats, the seconds
  earlier extensions bought) move at every look, so keeping them exact would make every
  question new; the TTL bounds how stale they are in a cached answer;
- a standing verdict per operation: the model's last answer on an operation, with the
  key of what it was shown, answers again while the operation shows nothing new: the
  same words, the same probe answers, and its silence and age on the same coarse scale
  (``SCALE``: within a minute, five, twenty, an hour, four hours). A stuck operation
  repeating one note is a handful of questions for its whole stall, not one per
  extension; what each answer may buy is bounded by the extension's bounds
  (``supervisor/extension.py``), not by how often the model is asked. New words (a
  note, a probe answer, a message), or a silence or an age a step longer, make a new
  question.

Over a budget the ladder goes on as without a model (the evidence decides, then a
reminder or a person): never a kill, and never an extension nobody asked for. A cached
verdict acts through the ladder's bounds like a fresh one.
"""

from __future__ import annotations

import bisect
import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig

from outlast.config import ModelSettings, Settings
from outlast.supervisor.conversation import Reader, with_messages
from outlast.supervisor.judge import FAILED, Judged, judge, model_from_env, quoted

# What became of one question to the model (``outlast_supervisor_model_calls_total``).
CALLED, CACHED, OVER_BUDGET, FAILED_CALL = "called", "cached", "over_budget", "failed"

NO_COST: dict[str, float] = {"model_calls": 0, "tokens": 0}
PER_RUN: int = Settings.model_fields["supervisor_max_calls_per_run"].default
# left out of the cache key: they move at every look (``renewals`` counts heartbeats)
CLOCKS = ("silent_for", "elapsed", "renewals")
# ... but silence and age on a coarse scale are kept: an operation silent for an hour is
# not the one that was silent for a minute when the model said "fine" (seconds: 1, 5,
# 20 minutes, 1 and 4 hours)
SCALE = (60.0, 300.0, 1200.0, 3600.0, 14_400.0)

Clock = Callable[[], float]


class CallBucket:
    """A token bucket of one minute's calls, refilled at ``per_minute`` a minute."""

    def __init__(self, per_minute: float, clock: Clock = time.monotonic) -> None:
        self.capacity = per_minute
        self._clock = clock
        self._tokens = per_minute
        self._at = clock()

    def take(self) -> bool:
        now = self._clock()
        refill = (now - self._at) * self.capacity / 60.0
        self._tokens, self._at = min(self.capacity, self._tokens + refill), now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class VerdictCache:
    """The latest ``size`` verdicts, each answering again for ``ttl`` seconds."""

    def __init__(self, size: int, ttl: float, clock: Clock = time.monotonic) -> None:
        self.size, self.ttl = size, ttl
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, Judged]] = OrderedDict()

    def get(self, key: str) -> Judged | None:
        hit = self._items.get(key)
        if hit is None:
            return None
        if self._clock() - hit[0] > self.ttl:
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return hit[1]

    def put(self, key: str, judged: Judged) -> None:
        if self.size <= 0:
            return
        self._items[key] = (self._clock(), judged)
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)


@dataclass(slots=True)
class Costs:
    """One process's bucket and cache; without them (a test, the evaluation) only the
    per-run budget, carried in the ladder's state, applies."""

    bucket: CallBucket | None = None
    cache: VerdictCache | None = None
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    @classmethod
    def of_settings(cls, settings: Settings) -> Costs:
        return cls(
            CallBucket(settings.supervisor_max_calls_per_minute),
            VerdictCache(settings.supervisor_cache_size, settings.supervisor_cache_ttl),
            settings.model_prices,
        )


_PROCESS: dict[int, Costs] = {}


def for_process(settings: Settings) -> Costs:
    """The ``Costs`` every run a process executes shares, as the bound is: one per
    ``Settings``, which a process builds once. Not one per process outright, so tests
    that each serve with their own settings do not share a cache; dropped with them, so
    a later object at the same address starts afresh."""
    key = id(settings)
    if key not in _PROCESS:
        _PROCESS[key] = Costs.of_settings(settings)
        weakref.finalize(settings, _PROCESS.pop, key, None)
    return _PROCESS[key]


def question_key(model: str, state: Mapping[str, Any]) -> str:
    """The hash of what the judge is shown, its clocks left out, and of who is asked."""
    shown_activity = state.get("activity") or {}
    activity = {k: v for k, v in shown_activity.items() if k not in CLOCKS}
    activity["silent_for"] = bisect.bisect(SCALE, float(shown_activity.get("silent_for") or 0))
    answers: list[Any] = []
    for answer in state.get("probe_history") or []:
        if not answers or answers[-1] != answer:  # the same answer again is nothing new
            answers.append(answer)
    # the renewals left and the seconds extended move at every look too: the same
    # operation, unchanged, asked before the cap, at it and after an extension, is one
    # question
    shown = quoted(
        {
            **state,
            "activity": activity,
            "probe_history": answers,
            "renewals_granted": None,
            "extended_for": None,
        }
    )
    return hashlib.sha256(f"{model}\n{shown}".encode()).hexdigest()


def _name_of(model: BaseChatModel) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    # an unnamed model handed in (a test's fake) is only ever the same as itself
    return name if isinstance(name, str) else f"{type(model).__qualname__}@{id(model)}"


def chosen(
    state: Mapping[str, Any], model: BaseChatModel | None, first: BaseChatModel | None = None
) -> tuple[str, BaseChatModel | None]:
    """Who is asked, and under which name. With two models, the cheaper one takes an
    operation's first look; once it has been extended, another extension rests on the
    stronger one, since what a steered answer costs grows with each."""
    first_look = not int(state.get("extensions") or 0)
    if model is not None:
        picked = first if first is not None and first_look else model
        return _name_of(picked), picked
    settings = ModelSettings()
    name, cheap = settings.supervisor_model.strip(), settings.supervisor_first_model.strip()
    if name and cheap and first_look:
        name = cheap
    return name, model_from_env(name)


def _over_budget(state: Mapping[str, Any], costs: Costs) -> str | None:
    spent, allowed = int(state.get("run_model_calls") or 0), state.get("max_calls_per_run")
    allowed = PER_RUN if allowed is None else int(allowed)
    if spent >= allowed:
        return f"the run's {allowed} supervisor model call(s) are spent"
    if costs.bucket is not None and not costs.bucket.take():
        return "the process's supervisor model calls per minute are spent"
    return None


def usd_of(
    cost: Mapping[str, float], model: str, prices: Mapping[str, Mapping[str, float]]
) -> float | None:
    """What a call's tokens cost in USD, from ``OUTLAST_MODEL_PRICES`` by
    ``provider:model`` or by the model's own name; None: the model is not priced."""
    price = prices.get(model) or prices.get(model.split(":", 1)[-1])
    if not price:
        return None
    tokens_in, tokens_out = cost.get("input_tokens", 0), cost.get("output_tokens", 0)
    usd = (tokens_in * price.get("input", 0.0) + tokens_out * price.get("output", 0.0)) / 1e6
    return round(usd, 9)


def priced(judged: Judged, model: str, prices: Mapping[str, Mapping[str, float]]) -> Judged:
    """The call with its price; unpriced calls show tokens only."""
    usd = usd_of(judged.cost, model, prices)
    return judged if usd is None else judged._replace(cost={**judged.cost, "usd": usd})


class Asked(NamedTuple):
    judged: Judged
    outcome: str | None  # ``CALLED`` …; None: no model is configured
    model: str  # who answered (or would have)
    key: str = ""  # the question's (``question_key``)


def standing(asked: Asked) -> dict[str, Any]:
    """What a look keeps of a verdict, to stand for the operation while it shows nothing
    new (the runtime's ``Activity.standing``); nothing when there was no verdict."""
    verdict, reason, _, seconds = asked.judged
    if verdict is None or not asked.key:
        return {}
    stood = {"key": asked.key, "verdict": verdict, "reason": reason, "seconds": seconds}
    return {"standing": stood}


def _stands(state: Mapping[str, Any], key: str) -> Judged | None:
    stood = state.get("standing") or {}
    if stood.get("key") != key or stood.get("verdict") is None:
        return None
    reason = f"{stood.get('reason', '')} (standing: the operation showed nothing new since)"
    return Judged(str(stood["verdict"]), reason, {**NO_COST, "cached": 1}, stood.get("seconds"))


async def ask_configured(state: Mapping[str, Any], config: RunnableConfig) -> Asked:
    """``ask``, with what the ladder's config carries: a model object (tests, the
    evaluation), a cheaper first-look one, the process's ``Costs`` and the reader of the
    run's conversation (``supervisor/conversation.py``; the policy hands both in)."""
    configurable = config.get("configurable", {})
    return await ask(
        state,
        configurable.get("supervisor_model"),
        configurable.get("supervisor_costs"),
        configurable.get("supervisor_first_model"),
        configurable.get("supervisor_conversation"),
    )


def said(asked: Asked) -> dict[str, Any]:
    """What a look records of its question to the model, when there was one."""
    return {"model_call": asked.outcome, "judge": asked.model} if asked.outcome else {}


async def ask(
    state: Mapping[str, Any],
    model: BaseChatModel | None,
    costs: Costs | None,
    first: BaseChatModel | None = None,
    conversation: Reader | None = None,
) -> Asked:
    """The model's verdict within the budgets, or the cache's for the same question.

    ``conversation`` reads the run's last messages (``supervisor/conversation.py``), once a
    model is there to read them: they are part of the question, so its cache key too. A
    question over a budget has read them for nothing; the cache, which may answer it for
    free, needs them first, and such a question is rare (once per stall before the cap,
    at its early look, and past the cap, within budgets)."""
    name, model = chosen(state, model, first)
    if model is None:
        return Asked(Judged(None, "no supervisor model configured", dict(NO_COST)), None, "")
    if conversation is not None:
        state = with_messages(state, await conversation())
    costs = costs or Costs()
    key = question_key(name, state)
    stood = _stands(state, key)
    if stood is not None:
        return Asked(stood, CACHED, name, key)
    cached = costs.cache.get(key) if costs.cache is not None else None
    if cached is not None:
        return Asked(cached._replace(cost={**NO_COST, "cached": 1}), CACHED, name, key)
    over = _over_budget(state, costs)
    if over is not None:
        return Asked(Judged(None, over, dict(NO_COST)), OVER_BUDGET, name)
    judged = await judge(dict(state), model)
    if judged.reason.startswith(FAILED):
        return Asked(judged, FAILED_CALL, name)
    judged = priced(judged, name, costs.prices)
    if judged.verdict is not None and costs.cache is not None:
        costs.cache.put(key, judged)
    return Asked(judged, CALLED, name, key)
