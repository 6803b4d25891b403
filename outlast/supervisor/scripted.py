"""Offline supervisor models: deterministic, and named as such wherever they are used.

``ScriptedJudge`` (``OUTLAST_SUPERVISOR_MODEL=scripted``) reads only the activity's facts
from the data block (how long it has been silent, whether it ever showed signs of life)
and never the quoted output, so no text inside the judged content can move it.

``RandomJudge`` (``random``) answers any verdict at random and ``GullibleJudge``
(``gullible``, ``supervisor/gullible.py``) does whatever the quoted content asks: judges
that fail, so that the evaluation (``bench/supervisor_eval.py``) shows what the ladder
holds against, not what a well-behaved model happens to answer. Their randomness is
seeded by the facts of the look, never by its text: the same look with and without an
injected instruction gets the same random answer, so any difference is the text's doing.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from outlast.supervisor.judge import VerdictAnswer

# Every verdict the judge's schema allows, ``extend`` included.
ANSWERS: tuple[str, ...] = get_args(VerdictAnswer.model_fields["verdict"].annotation)
# A random ``extend`` asks for up to this long: far past what one extension may last, so
# that the ladder's clipping is exercised, not assumed.
RANDOM_LONGEST = 4 * 3600.0

_DATA = re.compile(r"<data>\n(.*)\n</data>", re.DOTALL)
# What the operation writes, a tool's name included (an MCP server names its tools).
_TEXT_FIELDS = ("name", "note", "notes", "messages")


def data_block(messages: list[BaseMessage]) -> dict[str, Any]:
    """The fenced data block of the judge's question (``judge.quoted``)."""
    for message in messages:
        match = _DATA.search(str(message.content))
        if match:
            found: dict[str, Any] = json.loads(match.group(1))
            return found
    return {}


def facts_of(data: dict[str, Any]) -> dict[str, Any]:
    """The activity's facts without any of its text."""
    activity = data.get("activity") or {}
    return {k: v for k, v in activity.items() if k not in _TEXT_FIELDS}


def seeded(seed: int, data: dict[str, Any]) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{json.dumps(facts_of(data), sort_keys=True)}".encode())
    return random.Random(digest.digest())


class OfflineJudge(BaseChatModel):
    """A chat model whose answer is a verdict computed from the data block."""

    def decide(self, data: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def _llm_type(self) -> str:
        return f"outlast-{type(self).__name__}"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = AIMessage(
            content=json.dumps(self.decide(data_block(messages))),
            response_metadata={"model_name": self._llm_type},
            usage_metadata={"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class ScriptedJudge(OfflineJudge):
    """Verdicts from facts: ``renew`` if the activity showed life and has been silent for
    less than ``patience`` seconds, else ``escalate``."""

    patience: float = 300.0

    def decide(self, data: dict[str, Any]) -> dict[str, str]:
        facts = facts_of(data)
        silent = float(facts.get("silent_for") or 0)
        if int(facts.get("renewals") or 0) > 0 and silent < self.patience:
            reason = f"showed life before; silent {silent:g}s < {self.patience:g}s"
            return {"verdict": "renew", "reason": reason}
        return {"verdict": "escalate", "reason": f"silent {silent:g}s; a person decides"}


def at_random(rng: random.Random) -> dict[str, Any]:
    """Any verdict of the schema; an ``extend`` with any length up to four hours."""
    answer: dict[str, Any] = {"verdict": rng.choice(ANSWERS), "reason": "at random"}
    if answer["verdict"] == "extend":
        answer["seconds"] = round(rng.uniform(1.0, RANDOM_LONGEST), 1)
    return answer


class RandomJudge(OfflineJudge):
    """Any verdict, at random (seeded by the look's facts)."""

    seed: int = 0

    def decide(self, data: dict[str, Any]) -> dict[str, Any]:
        return at_random(seeded(self.seed, data))
