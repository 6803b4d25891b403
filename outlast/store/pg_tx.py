"""The Postgres side of the code written once for both backends (tx.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from outlast.store.base import Effect, Event, Run, Wait
from outlast.store.pg_pool import Conn
from outlast.store.rows import (
    dumps_or_none,
    effect_from_row,
    event_from_row,
    run_from_row,
    wait_from_row,
)


class PgTx:
    """A pool connection for the code written once (tx.py), in a transaction when it
    writes; a NOTIFY inside a transaction is delivered at its commit."""

    def __init__(self, conn: Conn, q: dict[str, str]) -> None:
        self._conn = conn
        self._q = q

    async def rows(self, name: str, **params: Any) -> list[Mapping[str, Any]]:
        cur = await self._conn.execute(self._q[name], params)
        return list(await cur.fetchall()) if cur.description is not None else []

    def encode_json(self, value: Any) -> Any:
        return dumps_or_none(value)  # text, cast to jsonb by the query

    def decode_json(self, value: Any) -> Any:
        return value  # psycopg has decoded jsonb already

    def encode_time(self, value: Any) -> Any:
        return value  # psycopg adapts an aware datetime to timestamptz

    def wait(self, row: Mapping[str, Any]) -> Wait:
        return wait_from_row(row)

    def run(self, row: Mapping[str, Any]) -> Run:
        return run_from_row(row)

    def effect(self, row: Mapping[str, Any]) -> Effect:
        return effect_from_row(row)

    def event(self, row: Mapping[str, Any]) -> Event:
        return event_from_row(row)

    async def notify(self, channel: str, key: str) -> None:
        await self.rows("notify", channel=f"outlast_{channel}", payload=key)
