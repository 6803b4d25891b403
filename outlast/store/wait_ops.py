"""Waits and signals, written once for both backends over ``Tx`` (``contract/waits.py``):
answers, signals, the reads of waits, and the wakers' side (timers, deadlines, probes).
Parking a run on its waits is ``park_ops.py``'s.

Answers and signals are stored first and matched second. A wait is answered by a
conditional ``UPDATE … WHERE status = 'open'``: of twenty concurrent answers exactly one
changes a row, and only that one requeues the run. Listings read what they show in a
fixed number of queries per page (``open_waits`` takes the runs of a whole page), never
one query per row.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from outlast.errors import IdempotencyKeyReused, WaitNotFound, WaitNotOpen
from outlast.store.hub import QUEUE, STATUS
from outlast.store.records import EventDraft, Wait
from outlast.store.tx import Tx, TxProvider, append_events
from outlast.vocabulary import DIGEST, EventType, RunStatus, WaitKind, WaitStatus, is_sealed


async def find_wait(tx: Tx, query: str, run_id: str, wait_id: str) -> Wait:
    """The wait ``wait_id`` of ``run_id`` by ``query`` (``w_get`` locks it, ``w_read``
    does not); WaitNotFound for a malformed id or another run's wait."""
    try:
        uuid.UUID(wait_id)
    except ValueError:
        raise WaitNotFound(f"run {run_id} has no wait {wait_id!r}") from None
    rows = await tx.rows(query, id=wait_id)
    if not rows or str(rows[0]["run_id"]) != run_id:
        raise WaitNotFound(f"run {run_id} has no wait {wait_id!r}")
    return tx.wait(rows[0])


def ended(wait: Wait, how: str, value: Any) -> EventDraft:
    """The ``wait.ended`` of ``wait``, answered ``how`` with ``value``."""
    # Credentials go to the run (through its wait row), never into the event log that
    # every stream reader sees.
    shown = "(redacted)" if wait.kind == "auth" and value is not None else value
    return EventDraft(
        EventType.WAIT_ENDED, {"wait_id": wait.id, "kind": wait.kind, "how": how, "value": shown}
    )


def _same_answer(stored: Any, given: Any) -> bool:
    """Two sealed answers are the same when their keyed digests are (the ciphertexts never
    are: each sealing is randomised)."""
    if is_sealed(stored) and is_sealed(given):
        return bool(stored[DIGEST] == given[DIGEST])
    return bool(stored == given)


async def answer_in(
    tx: Tx, wait: Wait, value: Any, how: str, key: str | None = None
) -> tuple[Wait, list[EventDraft]]:
    """Answer an open wait inside an open transaction, and requeue its run if it waits:
    the wait as answered and the events to append (WaitNotOpen if it was not open)."""
    if wait.kind == WaitKind.AUTH and value is not None and not is_sealed(value):
        # Credentials are stored sealed, whichever face answered: one that came here in
        # the clear is a bug of the caller, and must not reach the disk.
        raise ValueError("an auth wait's answer must be sealed (secretbox.seal_answer)")
    rows = await tx.rows("w_answer", id=wait.id, answer=tx.encode_json(value), how=how, key=key)
    if not rows:
        raise WaitNotOpen(f"wait {wait.id} is {wait.status}; it was not answered again")
    drafts = [ended(wait, how, value)]
    if await tx.rows("run_requeue_if_waiting", run_id=wait.run_id):
        drafts.append(
            EventDraft(
                EventType.RUN_QUEUED,
                {"status": RunStatus.QUEUED, "reason": f"{wait.kind} wait answered ({how})"},
            )
        )
        await tx.notify(QUEUE, wait.run_id)
        await tx.notify(STATUS, wait.run_id)
    return tx.wait(rows[0]), drafts


class WaitOps(TxProvider):
    """Answers, signals, reads of waits, and the wakers' side."""

    async def answer(
        self, run_id: str, wait_id: str, value: Any, how: str = "input", key: str | None = None
    ) -> tuple[Wait, bool]:
        async with self._writing() as tx:
            wait = await self._lock_wait(tx, run_id, wait_id)
            if wait.status != WaitStatus.OPEN:
                if key is not None and wait.answer_key == key:
                    if not _same_answer(wait.answer, value):
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {key!r} already answered wait {wait_id} "
                            "with another value"
                        )
                    return wait, False  # the same answer, retried
                raise WaitNotOpen(
                    f"wait {wait_id} is already {wait.status}"
                    + (f" ({wait.answered_how})" if wait.answered_how else "")
                    + "; a wait is answered once"
                )
            answered, drafts = await answer_in(tx, wait, value, how, key)
            await append_events(tx, run_id, drafts)
            return answered, True

    async def _lock_wait(self, tx: Tx, run_id: str, wait_id: str) -> Wait:
        """The run's wait, its row locked until the transaction ends (Postgres)."""
        return await find_wait(tx, "w_get", run_id, wait_id)

    async def get_wait(self, run_id: str, wait_id: str) -> Wait:
        async with self._reading() as tx:
            return await find_wait(tx, "w_read", run_id, wait_id)

    async def list_waits(self, run_id: str, status: str | None = None) -> list[Wait]:
        async with self._reading() as tx:
            return [tx.wait(r) for r in await tx.rows("w_list", run_id=run_id, status=status)]

    async def open_waits(self, run_ids: Sequence[str]) -> dict[str, list[Wait]]:
        """The open waits of many runs in one query, for a listing: a page of waiting
        runs costs one read, whatever its size, not one per run."""
        if not run_ids:
            return {}
        async with self._reading() as tx:
            rows = await tx.rows("w_open_of_runs", run_ids=tx.encode_json(list(run_ids)))
        found: dict[str, list[Wait]] = {}
        for row in rows:  # ordered by run, then as list_waits orders one run's waits
            wait = tx.wait(row)
            found.setdefault(wait.run_id, []).append(wait)
        return found

    async def signal(self, key: str, payload: Any, principal: str = "") -> list[str]:
        """Store the signal, then wake every open wait on ``key`` of the sender's runs
        (another principal's runs never see it); returns the runs woken."""
        async with self._writing() as tx:
            await tx.rows(
                "sig_insert", key=key, payload=tx.encode_json(payload), principal=principal
            )
            woken: list[str] = []
            for row in await tx.rows("sig_match", key=key, principal=principal):
                wait = tx.wait(row)
                _, drafts = await answer_in(tx, wait, {"key": key, "payload": payload}, "signal")
                await append_events(tx, wait.run_id, drafts)
                woken.append(wait.run_id)
            return woken

    # -- the wakers ----------------------------------------------------------------------

    async def due_waits(self, limit: int, hold: float) -> list[Wait]:
        """Claim waits whose time has come (timers, deadlines, probes), pushing their
        ``wake_at`` ``hold`` seconds ahead so no other worker takes them meanwhile."""
        async with self._writing() as tx:
            return [tx.wait(r) for r in await tx.rows("w_due", limit=limit, hold=hold)]

    async def next_due_in(self) -> float | None:
        async with self._reading() as tx:
            rows = await tx.rows("w_next_due")
            seconds = rows[0]["seconds"] if rows else None
            return None if seconds is None else float(seconds)

    async def wake(self, wait: Wait, value: Any, how: str) -> bool:
        """End a due wait by itself (timer, deadline, probe result); False if it was
        answered meanwhile."""
        async with self._writing() as tx:
            try:
                _, drafts = await answer_in(tx, wait, value, how)
            except WaitNotOpen:
                return False
            await append_events(tx, wait.run_id, drafts)
            return True

    async def probe_ok(self, wait: Wait, every: float, detail: Any) -> None:
        async with self._writing() as tx:
            rows = await tx.rows("w_probe_ok", id=wait.id, every=every)
            if rows:
                renewed = tx.wait(rows[0])
                await append_events(
                    tx,
                    wait.run_id,
                    [
                        EventDraft(
                            EventType.WAIT_RENEWED,
                            {
                                "wait_id": wait.id,
                                "renewals": renewed.renewals,
                                "detail": detail,
                                "lease_expires_at": renewed.public()["lease_expires_at"],
                            },
                        )
                    ],
                )

    async def probe_failed(self, wait: Wait, every: float, error: str) -> int:
        async with self._writing() as tx:
            rows = await tx.rows("w_probe_failed", id=wait.id, every=every)
            if not rows:
                return 0
            failures: int = rows[0]["failures"]
            await append_events(
                tx,
                wait.run_id,
                [
                    EventDraft(
                        EventType.WAIT_PROBE_FAILED,
                        {"wait_id": wait.id, "failures": failures, "error": error},
                    )
                ],
            )
            return failures
