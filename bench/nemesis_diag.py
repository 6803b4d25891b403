"""What a stuck run was doing: its row, its log, and its holder's tasks (and the row and
log of a run that recorded its end twice).

A run still not terminal when a trial's time is up is either unclaimed (nobody took it
back), or held by a process whose execution waits on something that will not come while
the lease goes on being renewed. The row says which (``worker_id`` names the holder's
pid); the holder's task dump (``kill -USR1``, outlast/taskdump.py) says on what it waits.
Each stuck run gets a file ``stuck-<trial>-<key>.txt`` next to the results.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg
from nemesis_cluster import Cluster, Member
from nemesis_pg import OwnPostgres

ROW = """
SELECT status, worker_id, lease_epoch, attempts, last_seq, lease_expires_at - now(),
       updated_at, now(), error
FROM outlast_runs WHERE id = %s
"""
EVENTS = "SELECT seq, type, created_at FROM outlast_events WHERE run_id = %s ORDER BY seq"
NAMES = ("status", "worker_id", "lease_epoch", "attempts", "last_seq", "lease_expires_at")
SQLITE_ROW = f"SELECT {', '.join(NAMES)}, updated_at, error FROM outlast_runs WHERE id = ?"


async def _row(pg: OwnPostgres, run_id: str) -> tuple[dict[str, Any], list[str]]:
    async with await psycopg.AsyncConnection.connect(pg.url(), autocommit=True) as conn:
        row = await (await conn.execute(ROW, (run_id,))).fetchone()
        events = await (await conn.execute(EVENTS, (run_id,))).fetchall()
    names = ("status", "worker_id", "epoch", "attempts", "last_seq", "lease_left", "updated")
    fields = dict(zip((*names, "db_now", "error"), row or (), strict=False))
    return {k: str(v) for k, v in fields.items()}, [f"{s} {t} {c}" for s, t, c in events]


def _sqlite_row(db: Path, run_id: str) -> tuple[dict[str, Any], list[str]]:
    """The same from the SQLite file, read-only beside the server (times are epochs)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(SQLITE_ROW, (run_id,)).fetchone()
        events = conn.execute(EVENTS.replace("%s", "?"), (run_id,)).fetchall()
    finally:
        conn.close()
    fields = dict(zip((*NAMES, "updated", "error"), row or (), strict=False))
    fields["now"] = time.time()
    return {k: str(v) for k, v in fields.items()}, [f"{s} {t} {c}" for s, t, c in events]


def _holder(cluster: Cluster, worker_id: str) -> Member | None:
    parts = worker_id.split(":")
    pid = int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else None
    for member in cluster.members.values():
        if member.proc is not None and member.proc.pid == pid:
            return member
    return None


async def _dump(member: Member, limit: float = 5.0) -> str:
    """The member's task dump: what it printed after a SIGUSR1."""
    assert member.proc is not None
    before = len(member.proc.output())
    member.signal(signal.SIGUSR1)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        printed = member.proc.output()[before:]
        if "--- end ---" in printed:
            return printed
        await asyncio.sleep(0.1)
    return f"(no task dump within {limit:.0f} s)\n{member.proc.output()[before:]}"


async def diagnose(
    cluster: Cluster,
    pg: OwnPostgres | None,
    stuck: list[tuple[str, str]],
    folder: Path,
    trial: int,
    kind: str = "stuck",
) -> list[str]:
    """For each (key, run_id) stuck, a file with the row, the log and the holder's dump
    (or every executing member's, when no live member holds it); the files' names. For
    another ``kind`` (``twice``: a run whose last node recorded its end twice) the row
    and the log, which show the attempts and what ended each, without the dumps."""
    written = []
    for key, run_id in stuck:
        if pg is not None:
            row, events = await _row(pg, run_id)
        else:
            assert cluster.disk is not None
            row, events = _sqlite_row(cluster.disk / "outlast.db", run_id)
        holder = _holder(cluster, row.get("worker_id", ""))
        members = [holder] if holder else [m for m in cluster.workers if m.proc is not None]
        dumps = [f"== {m.name}\n{await _dump(m)}" for m in members] if kind == "stuck" else []
        path = folder / f"{kind}-{trial}-{key}.txt"
        text = [f"run {run_id} ({key})", json.dumps(row, indent=1), "events:", *events]
        text += [f"holder: {holder.name if holder else 'none alive'}", *dumps]
        path.write_text("\n".join(text) + "\n")
        written.append(path.name)
    return written
