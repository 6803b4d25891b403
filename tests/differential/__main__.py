"""``python -m tests.differential [--show] [scenario ...]``: the harness by hand. Starts
``langgraph dev`` and ``outlast serve`` on SQLite and on Postgres, runs the scenarios
(all, or those named) against each, and prints every difference (declared or not) and
the table the harness reports; ``--show``: every step as each server showed it too."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.differential.compare import judge
from tests.differential.differences import ADDITIVE, NORMALISED, UNCOMPARED, declared
from tests.differential.runner import run_scenarios
from tests.differential.scenarios import SCENARIOS
from tests.differential.servers import Server, start_outlast, start_reference


async def main(args: list[str]) -> int:
    show = "--show" in args
    names = [a for a in args if a != "--show"] or list(SCENARIOS)
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        servers: list[Server] = []
        try:
            for started in await asyncio.gather(
                start_reference(folder / "reference"),
                start_outlast("sqlite", folder / "sqlite"),
                start_outlast("postgres", folder / "postgres"),
            ):
                servers.append(started)
            ref, *ours = servers
            ignore = frozenset(UNCOMPARED) | frozenset(NORMALISED) | frozenset(ADDITIVE)
            theirs, *seen = await asyncio.gather(
                run_scenarios(ref.url, names, frozenset(UNCOMPARED) | frozenset(NORMALISED)),
                *(run_scenarios(s.url, names, ignore) for s in ours),
            )
        finally:
            for server in servers:
                await asyncio.to_thread(server.stop)
    if show:
        for name in names:
            for server, observed in zip(servers, [theirs, *seen], strict=True):
                for step, value in observed[name].steps:
                    print(f"{name} / {step} / {server.name}: {json.dumps(value, sort_keys=True)}")
    print("| backend | scenarios | steps | same | declared | undeclared |")
    print("|---|---|---|---|---|---|")
    failed = 0
    verdicts = [judge(s.name, theirs, o) for s, o in zip(ours, seen, strict=True)]
    for v in verdicts:
        print(v.table())
    for v in verdicts:
        print(f"\n== {v.backend}")
        for d in v.declared:
            note = declared(d.scenario, d.step, v.backend)
            print(f"declared ({note.kind if note else '?'}): {d.scenario} / {d.step}")
        whole = len(names) == len(SCENARIOS)  # a part cannot tell stale declarations
        for failure in v.failures if whole else [d.show() for d in v.undeclared]:
            print(f"\nFAIL {failure}")
            failed += 1
    print(f"\n{time.monotonic() - began:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
