"""The effects ledger at work inside one run.

Before the call: ``started`` is committed. After it: ``done`` with the result. On a
re-execution of the node (a crash, a retry, a resumed interrupt) the same key finds its
row: ``done`` → the recorded result, the tool is not called (``effect.replayed``);
``failed`` (the call raised), or unfinished and idempotent → called again with the same
key; unfinished and not idempotent → ``reconcile(key, args)`` decides, or a person does,
through a ``reconciliation`` wait (``effect.unknown``). The same key with other
arguments is an error, never a silent replay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.types import interrupt

from outlast import faults
from outlast.errors import OutlastError
from outlast.jsonable import to_jsonable
from outlast.nodes.effects import Reconcile
from outlast.nodes.waits import WAIT_KEY
from outlast.runtime.sink import EventSink
from outlast.store import Effect, EffectStore, EventDraft, Lease
from outlast.vocabulary import EffectStatus, EventType

BEFORE_CALL = "effect.before_call"
AFTER_CALL = "effect.after_call"
AFTER_DONE = "effect.after_done"

RECONCILE_SCHEMA = {
    "type": "object",
    "properties": {"happened": {"type": "boolean"}, "result": {}},
    "required": ["happened"],
    "additionalProperties": False,
}


class EffectArgumentsChanged(OutlastError):
    """A node re-ran an effect under the same key with other arguments: replaying the old
    result would be a lie, calling again could act twice. Not retryable."""

    status = 409
    title = "Effect arguments changed"


class RunLedger:
    """The ledger of one run, handed to its nodes through the run's config
    (``LEDGER_KEY``), so ``outlast.nodes.effects`` reaches the store without importing it."""

    def __init__(self, store: EffectStore, lease: Lease, sink: EventSink) -> None:
        self._store = store
        self._lease = lease  # a call starts only while it is held (partition, freeze)
        self._run_id = lease.run_id
        self._sink = sink

    def _event(self, kind: str, effect: Effect, **extra: Any) -> None:
        self._sink.put(
            EventDraft(
                kind, {"key": effect.key, "tool": effect.tool, "status": effect.status, **extra}
            )
        )

    async def run_effect(
        self,
        *,
        key: str,
        tool: str,
        args: dict[str, Any],
        idempotent: bool,
        call: Callable[[str], Awaitable[Any]],
        reconcile: Reconcile | None,
        compensate: str | None = None,
    ) -> Any:
        stored_args = to_jsonable(args)
        args_hash = hashlib.sha256(
            json.dumps(stored_args, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        row, fresh = await self._store.effect_begin(
            self._run_id,
            key,
            tool,
            args_hash,
            stored_args,
            idempotent,
            compensate=compensate,
            lease=self._lease,
        )
        if not fresh:
            if row.args_hash != args_hash:
                raise EffectArgumentsChanged(
                    f"effect {tool} ({key}) ran again with other arguments; refusing to "
                    "replay or repeat it"
                )
            if row.status == EffectStatus.DONE:
                self._event(EventType.EFFECT_REPLAYED, row)
                return row.result
            if row.status != EffectStatus.FAILED and not idempotent:
                outcome = await self._unknown(row, stored_args, reconcile)
                if outcome is not _CALL:
                    return outcome
            row = await self._store.effect_retry(self._run_id, key, self._lease)
        self._event(EventType.EFFECT_STARTED, row, attempt=row.calls)
        faults.fault_point(BEFORE_CALL)
        try:
            result = await call(key)
        except Exception as exc:
            failed = await self._store.effect_finish(
                self._run_id, key, EffectStatus.FAILED, error=f"{type(exc).__name__}: {exc}"
            )
            self._event(EventType.EFFECT_FAILED, failed, error=failed.error)
            raise
        faults.fault_point(AFTER_CALL)
        done = await self._store.effect_finish(
            self._run_id, key, EffectStatus.DONE, to_jsonable(result)
        )
        self._event(EventType.EFFECT_DONE, done)
        faults.fault_point(AFTER_DONE)
        return result

    async def _unknown(self, row: Effect, args: Any, reconcile: Reconcile | None) -> Any:
        """A non-idempotent call started and never finished: did it happen?"""
        row = await self._store.effect_finish(self._run_id, row.key, EffectStatus.UNKNOWN)
        self._event(EventType.EFFECT_UNKNOWN, row)
        if reconcile is not None:
            answer = await reconcile(row.key, args)
            if isinstance(answer, tuple) and answer and answer[0] == "done":
                result = answer[1] if len(answer) > 1 else None
                done = await self._store.effect_finish(
                    self._run_id, row.key, EffectStatus.DONE, to_jsonable(result)
                )
                self._event(EventType.EFFECT_DONE, done, reconciled=True)
                return result
            return _CALL
        answer = interrupt(
            {
                WAIT_KEY: {
                    "kind": "reconciliation",
                    "object": {"tool": row.tool, "args": row.args, "key": row.key},
                    "prompt": (
                        f"{row.tool} started but its outcome is unknown (the worker stopped "
                        "before it was recorded). Did it happen? Answer "
                        '{"happened": true, "result": ...} or {"happened": false} to run it '
                        "again."
                    ),
                }
            },
            response_schema=RECONCILE_SCHEMA,
        )
        if isinstance(answer, dict) and answer.get("happened"):
            done = await self._store.effect_finish(
                self._run_id, row.key, EffectStatus.DONE, to_jsonable(answer.get("result"))
            )
            self._event(EventType.EFFECT_DONE, done, reconciled=True)
            return answer.get("result")
        return _CALL


_CALL: Any = object()
