"""The oracle judge: the ceiling of what a perfect model would bring to the supervisor.

It answers the verdict a scenario's label names (``supervisor_ambiguous.label``), whatever
the data block says: it is never fooled, never unsure, and never reads an injection. It
is a chat model like the others (``scripted.OfflineJudge``), asked through the same
``judge.judge`` with the same fenced data, so the ladder's limits bind it as they bind a
real model: where the ladder does not ask, or keeps a verdict as advice, a perfect answer
changes nothing, and the evaluation shows exactly how much that costs.

The verdict schema is closed (``judge.VerdictAnswer``); a label it does not yet hold
(``probe``) is answered with its nearest verdict that the schema allows, so that a wider
schema is used as soon as it exists. An ``extend`` carries its label's bound as
``seconds`` (the schema holds both since issue 33).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, get_args

from supervisor_ambiguous import Ideal, label
from supervisor_corpus import Scenario

from outlast.supervisor.judge import VerdictAnswer
from outlast.supervisor.scripted import OfflineJudge

ANSWERABLE: frozenset[str] = frozenset(get_args(VerdictAnswer.model_fields["verdict"].annotation))
# A request for a signal means "not yet": keep it, look again (``extend``: while the
# schema lacked it).
NEAREST: dict[str, str] = {"extend": "renew", "probe": "renew"}  # for a narrower schema


def answerable(ideal: Ideal) -> str:
    return ideal if ideal in ANSWERABLE else NEAREST[ideal]


class OracleJudge(OfflineJudge):
    """Answers its label, always."""

    ideal: Ideal = "renew"
    ideal_for: float | None = None

    def decide(self, data: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "verdict": answerable(self.ideal),
            "reason": f"the label says {self.ideal}",
        }
        if self.ideal_for is not None:
            answer["seconds"] = self.ideal_for  # what a bounded ``extend`` would ask for
        return answer


def oracle(scenarios: Iterable[Scenario], seed_of: Callable[[Scenario], int]) -> Any:
    """The evaluation's judge factory (seed → judge): a scenario's seed is the only thing
    of it a factory is handed, and it names the operation, so it finds the label."""
    labels: dict[int, tuple[Ideal, float | None]] = {}
    for scenario in scenarios:
        seed = seed_of(scenario)
        found = label(scenario)
        if labels.setdefault(seed, found) != found:
            raise ValueError(f"two labels share a seed: {scenario.name}")

    def made(seed: int) -> OracleJudge:
        ideal, bound = labels[seed]
        return OracleJudge(ideal=ideal, ideal_for=bound)

    return made
