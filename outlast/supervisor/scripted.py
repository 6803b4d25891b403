"""The offline supervisor model: deterministic, and named as such wherever it is used.

It reads only the activity's facts from the data block (how long it has been silent,
whether it ever showed signs of life) and never the quoted output, so no text inside the
judged content can move it. It never closes: with nothing but silence to go on, it
renews what had shown life recently and asks a person about the rest.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

_DATA = re.compile(r"<data>\n(.*)\n</data>", re.DOTALL)


class ScriptedJudge(BaseChatModel):
    """Verdicts from facts: ``renew`` if the activity showed life and has been silent for
    less than ``patience`` seconds, else ``escalate``."""

    patience: float = 300.0

    @property
    def _llm_type(self) -> str:
        return "outlast-scripted-judge"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        facts: dict[str, Any] = {}
        for message in messages:
            match = _DATA.search(str(message.content))
            if match:
                facts = json.loads(match.group(1)).get("activity") or {}
        silent = float(facts.get("silent_for") or 0)
        alive_before = int(facts.get("renewals") or 0) > 0
        if alive_before and silent < self.patience:
            verdict = {
                "verdict": "renew",
                "reason": f"showed life before; silent {silent:g}s < {self.patience:g}s",
            }
        else:
            verdict = {"verdict": "escalate", "reason": f"silent {silent:g}s; a person decides"}
        text = json.dumps(verdict)
        message = AIMessage(
            content=text,
            response_metadata={"model_name": "outlast-scripted"},
            usage_metadata={"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
