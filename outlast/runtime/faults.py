"""Named fault-injection points for crash tests.

Production code calls ``fault_point("name")`` at the moments a crash would be most
harmful. Nothing happens unless the environment variable ``OUTLAST_FAULTS`` names the
point (comma-separated), which only tests set: then the process kills itself with
SIGKILL right there, the way a machine dies: no cleanup, no finally blocks.
"""

from __future__ import annotations

import os
import signal

from outlast.config import FaultSettings

ENV = "OUTLAST_FAULTS"

# The points this runtime defines; tests refer to them by these names.
AFTER_CLAIM = "worker.after_claim"
BEFORE_FINISH = "worker.before_finish"


def armed() -> frozenset[str]:
    raw = FaultSettings().faults
    return frozenset(p.strip() for p in raw.split(",") if p.strip())


def fault_point(name: str) -> None:
    if name in armed():
        os.kill(os.getpid(), signal.SIGKILL)
