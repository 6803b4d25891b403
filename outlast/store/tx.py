"""What the store's code written once for both backends stands on: a backend's way into
its database, and the unfenced append every such write ends with.

Each backend supplies two ways into its database (``TxProvider``): ``_reading()``, for
statements that only read and never take a write lock, and ``_writing()``, a transaction
(``BEGIN`` on Postgres, ``BEGIN IMMEDIATE`` on SQLite). Both hand out a ``Tx``: the named
queries of the backend's own ``queries*.sql``, its JSON and time encodings, and a
``notify`` that is delivered at commit. The operations over them are one module per
capability of the contract (``store/contract/``): ``run_ops.py`` (run reads, runs on a
thread, activity and budget), ``event_ops.py``, ``wait_ops.py`` and ``parking.py``,
``transition_ops.py``, ``ledger_ops.py``, ``outbox_ops.py``, ``secrets_ops.py``,
``assistants.py``, ``lgthreads.py``.
"""

from __future__ import annotations

import abc
import datetime as dt
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from outlast.store.hub import EVENTS
from outlast.store.records import Effect, Event, EventDraft, Run, Wait


class Tx(Protocol):
    """One backend's way of running the shared code's statements. The shared code never
    sees SQL or a driver: it names a query and passes Python values, and the Tx turns
    them into what its database stores (Postgres: jsonb and timestamptz, which psycopg
    adapts; SQLite: JSON text and unix seconds as REAL) and back."""

    async def rows(self, name: str, **params: Any) -> list[Mapping[str, Any]]:
        """Run the named query of this backend's ``queries*.sql``; its rows (none for a
        statement that returns nothing)."""
        ...

    def encode_json(self, value: Any) -> Any:
        """A Python value as a JSON column's parameter (``None`` stays SQL NULL)."""
        ...

    def decode_json(self, value: Any) -> Any:
        """A JSON column as read back into Python (Postgres has already decoded it)."""
        ...

    def encode_time(self, value: Any) -> Any:
        """An aware datetime (or ``None``) as a time column's parameter."""
        ...

    # Row decoders: a row of its table as the contract's frozen dataclass, in this
    # backend's encodings.
    def wait(self, row: Mapping[str, Any]) -> Wait: ...

    def run(self, row: Mapping[str, Any]) -> Run: ...

    def event(self, row: Mapping[str, Any]) -> Event: ...

    def effect(self, row: Mapping[str, Any]) -> Effect: ...

    async def notify(self, channel: str, key: str) -> None:
        """Tell the hub's ``channel`` to look at ``key`` again, once the transaction has
        committed (a reader woken before the commit would find nothing new)."""
        ...


def stored_time(value: Any) -> dt.datetime:
    """A time column as read back, as an aware datetime: Postgres gives ``timestamptz``
    values, SQLite stores unix seconds as REAL."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return dt.datetime.fromtimestamp(float(value), dt.UTC)


class TxProvider(abc.ABC):
    """What a backend gives the code written once for both (the ``*Ops`` mixins,
    ``AssistantOps``): a way to read and a way to write. Every method
    of the shared code picks one, so whether a method can block writers, or be blocked
    by them, is visible where it is written."""

    @abc.abstractmethod
    def _reading(self) -> AbstractAsyncContextManager[Tx]:
        """For statements that only read. It never takes a write lock (SQLite has one
        for the whole file: a read that took it would queue behind every writer and stop
        them all while it ran), and the statements inside see one consistent state
        where the backend offers it cheaply (SQLite: one deferred read transaction on a
        read-only connection; Postgres: autocommit, each statement its own snapshot,
        since a transaction would cost two more round trips on every read). A
        statement that writes fails here on SQLite (the read connection is
        ``query_only``)."""

    @abc.abstractmethod
    def _writing(self) -> AbstractAsyncContextManager[Tx]:
        """One transaction for statements that must change the database together;
        committed when the block ends, rolled back if it raises. Notifications are
        delivered after the commit."""


async def append_events(tx: Tx, run_id: str, drafts: Sequence[EventDraft]) -> int:
    """Append inside an open transaction; the caller has already decided it may write."""
    rows = await tx.rows("bump_any", run_id=run_id, n=len(drafts))
    last: int = rows[0]["last_seq"]
    first = last - len(drafts) + 1
    for i, draft in enumerate(drafts):
        await tx.rows(
            "insert_event",
            run_id=run_id,
            seq=first + i,
            type=draft.type,
            data=tx.encode_json(draft.data),
        )
    await tx.notify(EVENTS, run_id)
    return last
