"""What the differential tests decide: every step of every scenario, as outlast showed
it, against the reference; the differences found against the declared ones
(``differences.py``), both ways; and the table the harness reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.differential.differences import (
    ADDITIVE,
    DIFFERENCES,
    NORMALISED,
    UNCOMPARED,
    declared,
)
from tests.differential.runner import Observed, StepDiff, compare


@dataclass
class Verdict:
    backend: str
    scenarios: int = 0
    steps: int = 0
    same: int = 0
    declared: list[StepDiff] = field(default_factory=list)
    undeclared: list[StepDiff] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # declared, and no longer so

    @property
    def failures(self) -> list[str]:
        return [d.show() for d in self.undeclared] + self.stale

    def table(self) -> str:
        return (
            f"| {self.backend} | {self.scenarios} | {self.steps} | {self.same} "
            f"| {len(self.declared)} | {len(self.undeclared)} |"
        )


def judge(backend: str, reference: dict[str, Observed], outlast: dict[str, Observed]) -> Verdict:
    verdict = Verdict(backend, scenarios=len(reference))
    found: set[tuple[str, str]] = set()
    for name, theirs in reference.items():
        diffs = compare(name, theirs, outlast[name])
        steps = len({s for s, _ in theirs.steps} | {s for s, _ in outlast[name].steps})
        verdict.steps += steps
        verdict.same += steps - len(diffs)
        for d in diffs:
            found.add((name, d.step))
            (verdict.declared if declared(name, d.step, backend) else verdict.undeclared).append(d)
    for d in DIFFERENCES:
        if d.scenario not in reference:
            verdict.stale.append(f"declared for a scenario that does not exist: {d.scenario}")
        if backend in d.backends and not d.sometimes and (d.scenario, d.step) not in found:
            verdict.stale.append(
                f"declared but not found (remove it from differences.py): "
                f"{d.scenario} / {d.step}: {d.what}"
            )
    met_ours = {k for o in outlast.values() for k in o.ignored}
    met_theirs = {k for o in reference.values() for k in o.ignored}
    for key in ADDITIVE:
        if key not in met_ours:
            verdict.stale.append(f"ADDITIVE {key!r}: outlast no longer sends it")
        if key in met_theirs:
            verdict.stale.append(f"ADDITIVE {key!r}: the reference sends it too")
    for key in [*UNCOMPARED, *NORMALISED]:
        if key not in met_theirs | met_ours:
            verdict.stale.append(f"{key!r} (differences.py): met on no server any more")
    return verdict
