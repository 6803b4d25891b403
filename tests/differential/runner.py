"""Running the scenarios against a server, and comparing what two servers showed."""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tests.differential.probe import Probe, Step, dumps
from tests.differential.scenarios import SCENARIOS

# Scenarios in flight at once against one server.
CONCURRENCY = 12
# A scenario that takes longer is stuck, not slow.
SCENARIO_TIMEOUT = 60.0


@dataclass
class Observed:
    """One scenario's steps on one server (as JSON: the reference's are shared between
    test processes through a file)."""

    steps: list[tuple[str, Any]]
    ignored: list[str]  # the keys left out that it met
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"steps": self.steps, "ignored": self.ignored, "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observed:
        return cls([(s, v) for s, v in data["steps"]], data["ignored"], data["seconds"])


async def run_scenarios(
    url: str, names: Iterable[str], ignore: frozenset[str] = frozenset()
) -> dict[str, Observed]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(name: str) -> tuple[str, Observed]:
        async with gate:
            probe = Probe(name, url, ignore)
            began = time.monotonic()
            try:
                await asyncio.wait_for(SCENARIOS[name].run(probe), SCENARIO_TIMEOUT)
            except Exception as exc:
                probe.steps.append(Step("<scenario raised>", f"{type(exc).__name__}: {exc}"))
            finally:
                await probe.close()
            seconds = time.monotonic() - began
            return name, Observed(
                [(s.name, s.value) for s in probe.steps], sorted(probe.ignored), seconds
            )

    return dict(await asyncio.gather(*(one(n) for n in names)))


@dataclass
class StepDiff:
    scenario: str
    step: str
    reference: Any
    outlast: Any

    def show(self) -> str:
        left = dumps(self.reference).splitlines()
        right = dumps(self.outlast).splitlines()
        diff = difflib.unified_diff(left, right, "langgraph dev", "outlast", lineterm="", n=2)
        return f"{self.scenario} / {self.step}:\n" + "\n".join(diff)


_MISSING = "<no such step>"


def compare(scenario: str, reference: Observed, outlast: Observed) -> list[StepDiff]:
    """The steps whose outcome differs (a step only one side has differs too)."""
    ref = dict(reference.steps)
    out = dict(outlast.steps)
    names = [s for s, _ in reference.steps] + [s for s, _ in outlast.steps if s not in ref]
    assert len(set(ref)) == len(reference.steps), f"{scenario}: two steps of one name"
    return [
        StepDiff(scenario, n, ref.get(n, _MISSING), out.get(n, _MISSING))
        for n in names
        if ref.get(n, _MISSING) != out.get(n, _MISSING)
    ]
