"""A smoke of the nemesis (bench/nemesis.py), as CI runs it: ten trials, each fault at
least once (SIGKILL of one process and of all, a worker frozen past its lease, Postgres
restarted fast and as a crash, a worker partitioned from Postgres), on the bench's own
Postgres cluster; nothing lost, nothing done twice, every stream equal to its log.

It runs alone (``serial``): the trials restart processes and a Postgres on their own,
and the machine's two cores are theirs for the while. It needs the machine's Postgres
binaries, not its server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.serial, pytest.mark.slow]


def test_ten_trials_of_the_nemesis_lose_nothing(tmp_path: Path) -> None:
    smoke = ["--trials", "10", "--runs", "4", "--hours", "0.1", "--seed", "ci"]
    smoke += ["--partition-seconds", "5,10"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "nemesis.py"), *smoke, "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (tmp_path / "nemesis.json").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    found = json.loads((tmp_path / "nemesis.json").read_text())
    table = found["table"]
    assert sum(row["trials"] for row in table.values()) == 10, proc.stdout[-3000:]
    assert set(table) == {"kill_one", "kill_all", "freeze", "pg_fast", "pg_immediate", "partition"}
    for fault, row in table.items():
        counted = {k: row[k] for k in ("lost", "twice", "effects_twice", "stuck")}
        counted |= {k: row[k] for k in ("inexact_streams", "log_repeats", "not_recovered")}
        assert not any(counted.values()), (fault, counted, found["trials"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
