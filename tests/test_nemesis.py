"""Smokes of the nemesis (bench/nemesis.py), as CI runs them.

On Postgres: ten trials, each fault at least once (SIGKILL of one process and of all, a
worker frozen past its lease, Postgres restarted fast and as a crash, a worker
partitioned from Postgres, the same worker's link slowed by 100 to 300 ms a chunk), on
the bench's own Postgres cluster. On SQLite: four trials of one ``outlast serve`` whose
store is on a small tmpfs, SIGKILLed or its disk filled until writes fail (each refused
with a ``503``) and freed. In both: nothing lost, nothing done twice, every stream equal
to its log.

They are handed out first (``long``) and run beside the rest of the suite: they restart
only processes, a Postgres and a disk of their own, and what they assert are counts
with bounds of a minute, not timings. They need the machine's Postgres binaries, not its
server, and root (network namespaces, a tmpfs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.long, pytest.mark.slow]


def nemesis(folder: Path, *options: str) -> dict[str, Any]:
    """The nemesis's results with ``options``, once it asserted it counted nothing."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "nemesis.py"), *options, "--out", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (folder / "nemesis.json").exists(), said
    found: dict[str, Any] = json.loads((folder / "nemesis.json").read_text())
    for fault, row in found["table"].items():
        counted = {k: row[k] for k in ("lost", "twice", "effects_twice", "stuck")}
        counted |= {k: row[k] for k in ("inexact_streams", "log_repeats", "not_recovered")}
        assert not any(counted.values()), (fault, counted, found["trials"])
    assert proc.returncode == 0, said
    return found


def test_ten_trials_of_the_nemesis_lose_nothing(tmp_path: Path) -> None:
    smoke = ["--trials", "10", "--runs", "4", "--hours", "0.1", "--seed", "ci"]
    smoke += ["--partition-seconds", "5,10", "--latency-seconds", "4,8"]
    found = nemesis(tmp_path, *smoke)
    table = found["table"]
    assert sum(row["trials"] for row in table.values()) == 10
    assert set(table) == {
        *("kill_one", "kill_all", "freeze", "pg_fast", "pg_immediate", "partition"),
        "latency",
    }
    # the latency slowed w1's traffic indeed: the relay held its chunks
    slowed = [t for t in found["trials"] if t["fault"] == "latency"]
    assert all(t["chunks_held"] for t in slowed), slowed


def test_four_trials_on_sqlite_with_a_full_disk_lose_nothing(tmp_path: Path) -> None:
    smoke = ["--backend", "sqlite", "--trials", "4", "--runs", "4", "--hours", "0.1"]
    found = nemesis(tmp_path, *smoke, "--seed", "ci", "--faults", "kill_one,full_disk")
    table = found["table"]
    assert {k: row["trials"] for k, row in table.items()} == {"kill_one": 2, "full_disk": 2}
    # while the disk was full, the native face refused writes with a 503 "Store full"
    filled = [t for t in found["trials"] if t["fault"] == "full_disk"]
    assert all(t["refused_503"] for t in filled), filled
