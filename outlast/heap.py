"""The garbage collector of a long-lived serving process.

Once ``outlast serve`` or ``outlast worker`` has imported LangGraph, FastAPI and pydantic
and compiled its graphs, the heap holds some 165,000 objects that live as long as the
process. CPython's cyclic collector does not know that: every full collection walks them
all again. Measured on the 10-node graph at 10 runs in flight, a full collection took
about 180 ms, every 70 runs or so; every run on the event loop waited for it, so it was a
step's p99 as much as a cost (about 3 ms of CPU per run).

``gc.freeze()`` moves what exists at that moment to a permanent generation the collector
skips (CPython's own advice for long-lived processes; Instagram's servers are the known
case). A larger first threshold lets a run's short-lived objects die by reference counting
before a young collection walks them and promotes the survivors: a run in flight keeps its
state for a few hundred milliseconds, longer than 700 allocations.

Only for the CLI's processes: a test or a notebook that builds an app keeps CPython's
defaults, since freezing there would pin whatever garbage the caller still holds.
"""

from __future__ import annotations

import gc

# CPython's default is (700, 10, 10); only the youngest generation's threshold changes.
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Collect what startup left behind, then set the rest aside for good."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
