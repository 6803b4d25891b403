"""The Postgres store: the distributed engine.

Many API and worker processes, on many machines, share one database. Runs are claimed
with ``FOR UPDATE SKIP LOCKED``; leases are on database time (``now()``), never on a
worker's clock; every worker write carries its lease epoch in the ``WHERE`` clause of the
same statement that writes, so a fenced-off worker changes nothing. Each write that
matters sends a ``NOTIFY`` inside its own statement, delivered at commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg_pool import AsyncConnectionPool

from outlast.errors import LeaseLost, StoreUnavailable
from outlast.store import item_backends
from outlast.store.assistants import AssistantOps
from outlast.store.base import (
    EventDraft,
    EventLender,
    HeldRun,
    Lease,
    Lent,
    NewRun,
    Run,
    Store,
    same_request,
    thread_refused,
)
from outlast.store.cron_ops import CronOps
from outlast.store.event_ops import EventOps
from outlast.store.group_commit import GroupCommit
from outlast.store.hub import EVENTS, STATUS, Hub
from outlast.store.ledger_ops import LedgerOps
from outlast.store.lgthreads import LangGraphOps
from outlast.store.options import StoreOptions
from outlast.store.outbox_ops import OutboxOps, insert_run_webhooks
from outlast.store.park_ops import ParkOps
from outlast.store.pg_conninfo import DEAD_PEER_TIMEOUT
from outlast.store.pg_listen import Listener
from outlast.store.pg_pool import Conn, make_pool, pipeline
from outlast.store.pg_saver import FencedPostgresSaver
from outlast.store.pg_tx import PgTx
from outlast.store.rows import (
    dumps,
    dumps_or_none,
    run_from_row,
)
from outlast.store.run_ops import ActivityOps, RunReadOps, ThreadOps
from outlast.store.secrets_ops import SecretsOps
from outlast.store.sqlfiles import migrations, queries
from outlast.store.sweeps import SweepOps
from outlast.store.transition_ops import TransitionOps
from outlast.store.tx import Tx
from outlast.store.wait_ops import WaitOps
from outlast.vocabulary import RunStatus

THREAD_REFUSED = "OL002"  # the SQLSTATE outlast_thread_refused() raises (migration 0019)
# Arbitrary constant: serializes migrations of concurrent `serve` processes.
_MIGRATION_LOCK = 0x6F75746C617374  # "outlast"


class PostgresStore(
    RunReadOps,
    EventOps,
    WaitOps,
    ParkOps,
    ThreadOps,
    ActivityOps,
    TransitionOps,
    AssistantOps,
    LangGraphOps,
    CronOps,
    OutboxOps,
    SecretsOps,
    LedgerOps,
    SweepOps,
    Store,
):
    backend = "postgres"

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        hub: Hub | None = None,
        options: StoreOptions | None = None,
        dead_peer_timeout: float = DEAD_PEER_TIMEOUT,
    ) -> None:
        self.url = url
        self.dead_peer_timeout = dead_peer_timeout
        self.options = options or StoreOptions()
        self.hub = hub or Hub()
        self._q = queries("postgres")
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._listener: Listener | None = None
        self._group: GroupCommit | None = None  # the checkpoint writes' writer (open)
        self._min_size = min_size
        self._max_size = max_size

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def pool(self) -> AsyncConnectionPool[Conn]:
        if self._pool is None:
            raise RuntimeError("PostgresStore.open() was not called")
        return self._pool

    async def open(self) -> None:
        if self._pool is not None:
            return
        pool = make_pool(
            self.url,
            min_size=self._min_size,
            max_size=self._max_size,
            dead_peer_timeout=self.dead_peer_timeout,
        )
        try:
            await pool.open(wait=True, timeout=10)
        except Exception as exc:
            await pool.close()
            raise StoreUnavailable(f"cannot connect to Postgres: {exc}") from exc
        self._pool = pool
        self._group = GroupCommit(pool, self._carried_statement)
        self._items = await item_backends.open_postgres(pool, self.options)
        self._listener = Listener(self.url, self.hub, dead_peer_timeout=self.dead_peer_timeout)
        await self._listener.start()

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None
        if self._items is not None:
            await item_backends.close(self._items)
            self._items = None
        if self._group is not None:
            await self._group.close()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def migrate(self) -> list[str]:
        applied: list[str] = []
        async with self.pool.connection() as conn:
            # Session-level lock, taken by polling: the checkpointer's own setup runs
            # CREATE INDEX CONCURRENTLY, which waits for every open transaction, including
            # another process blocked in pg_advisory_lock(): an undetected deadlock. A
            # pg_try_advisory_lock() loop holds no transaction between attempts.
            while True:
                cur = await conn.execute(
                    "SELECT pg_try_advisory_lock(%s) AS ok", (_MIGRATION_LOCK,)
                )
                row = await cur.fetchone()
                if row is not None and row["ok"]:
                    break
                await asyncio.sleep(0.1)
            try:
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS outlast_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cur = await conn.execute("SELECT version FROM outlast_migrations")
                done = {row["version"] for row in await cur.fetchall()}
                for m in migrations("postgres"):
                    if m.version in done:
                        continue
                    async with conn.transaction():
                        await conn.execute(m.sql.encode())
                        await conn.execute(
                            "INSERT INTO outlast_migrations (version, name) VALUES (%s, %s)",
                            (m.version, m.name),
                        )
                    applied.append(f"{m.version:04d}_{m.name}")
                await AsyncPostgresSaver(self.pool).setup()
                # LangGraph's item tables; its setup() is not safe concurrently either.
                await item_backends.setup(self.items)
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
        return applied

    async def ping(self) -> None:
        try:
            async with self.pool.connection(timeout=2) as conn:
                await conn.execute("SELECT 1")
        except Exception as exc:
            raise StoreUnavailable(str(exc)) from exc

    carries_events = True
    announces_deliveries = True

    def checkpointer(
        self, lease: Lease | None = None, events: EventLender | None = None
    ) -> AsyncPostgresSaver:
        return FencedPostgresSaver(self.pool, lease, events, self._carried_statement, self._group)

    async def _fetch(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q[name], params)
            if cur.description is None:
                return []
            return await cur.fetchall()

    # -- acceptance and reads ----------------------------------------------------------

    def _insert_params(self, new: NewRun) -> dict[str, Any]:
        return {
            "id": new.id,
            "principal": new.principal,
            "thread_id": new.thread_id,
            "graph": new.graph,
            "input": dumps(new.input),
            "config": dumps(new.config),
            "metadata": dumps(new.metadata),
            "budget": dumps_or_none(new.budget),
            "idempotency_key": new.idempotency_key,
            "fingerprint": new.fingerprint,
            "max_attempts": new.max_attempts,
            "options": dumps_or_none(new.options),
            "thread_metadata": dumps(new.thread_metadata),
            "thread_owner": new.expected_owner,
            "quiet": new.claim_for is not None,
            "thread_ttl": self.options.thread_ttl.default_minutes,
            "thread_ttl_strategy": self.options.thread_ttl.strategy,
            "event": dumps(
                {"status": RunStatus.QUEUED, "graph": new.graph, "thread_id": new.thread_id}
            ),
        }

    async def create_run(self, new: NewRun) -> tuple[Run, bool]:
        if new.webhooks:  # more than the one statement or pipeline below writes
            async with self._writing() as tx:
                return await self._insert_run(tx, new)
        with _thread_refusal(new):
            return await self._create_run(new)

    async def _create_run(self, new: NewRun) -> tuple[Run, bool]:
        if new.claim_for is None:
            # One statement (run row, first event, NOTIFY) on an autocommit connection.
            rows = await self._fetch("insert_run", self._insert_params(new))
        else:
            # Eager start in one round trip: the insert and the claim as one pipeline,
            # which the server runs as one implicit transaction (see pg_saver.py). The
            # insert's upsert of the thread row locks it until the commit, so concurrent
            # acceptances on one thread go one after the other, and the claim, a later
            # statement with a later snapshot, sees every run committed before it.
            async with self.pool.connection() as conn:
                async with pipeline(conn):
                    inserted = await conn.execute(self._q["insert_run"], self._insert_params(new))
                    claimed = await conn.execute(self._q["claim"], self._claim_params(new))
                    await conn.execute(self._q["announce_queued"], {"id": new.id})
                rows = (await claimed.fetchall()) or (await inserted.fetchall())
        if rows:
            return run_from_row(rows[0]), True
        # The key exists: the INSERT waited for the other transaction and did nothing.
        found = await self._fetch(
            "get_by_key", {"principal": new.principal, "key": new.idempotency_key}
        )
        return same_request(new, run_from_row(found[0])), False

    async def _insert_run(self, tx: Tx, new: NewRun) -> tuple[Run, bool]:
        # As in create_run, the insert locks the thread's row until the commit: the claim,
        # a later statement, sees every run of the thread accepted before this one.
        with _thread_refusal(new):
            rows = await tx.rows("insert_run", **self._insert_params(new))
        if rows:
            await insert_run_webhooks(tx, new)
            if new.claim_for is not None:
                claimed = await tx.rows("claim", **self._claim_params(new))
                if claimed:
                    return run_from_row(claimed[0]), True
                await tx.rows("announce_queued", id=new.id)
            return run_from_row(rows[0]), True
        found = await tx.rows("get_by_key", principal=new.principal, key=new.idempotency_key)
        return same_request(new, run_from_row(found[0])), False

    @staticmethod
    def _claim_params(new: NewRun) -> dict[str, Any]:
        assert new.claim_for is not None
        claim = new.claim_for
        return {"id": new.id, "worker_id": claim.worker_id, "ttl": claim.ttl, "limit": 1}

    @asynccontextmanager
    async def _reading(self) -> AsyncIterator[Tx]:
        # Autocommit: MVCC reads neither wait for writers nor hold them up, and a
        # BEGIN/COMMIT pair would cost every read two more round trips.
        async with self.pool.connection() as conn:
            yield PgTx(conn, self._q)

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[Tx]:
        async with self.pool.connection() as conn, conn.transaction():
            yield PgTx(conn, self._q)

    # -- the worker side ---------------------------------------------------------------

    async def claim(self, worker_id: str, ttl: float, limit: int) -> list[Run]:
        params = {"id": None, "worker_id": worker_id, "ttl": ttl, "limit": limit}
        rows = await self._fetch("claim", params)
        return [run_from_row(r) for r in rows]

    async def renew(
        self, worker_id: str, ttl: float, run_ids: Sequence[str] | None = None
    ) -> list[HeldRun]:
        ids = list(run_ids) if run_ids is not None else None
        rows = await self._fetch("renew", {"worker_id": worker_id, "ttl": ttl, "ids": ids})
        return [HeldRun(str(r["id"]), r["lease_epoch"], RunStatus(r["status"])) for r in rows]

    def _lease_params(self, lease: Lease) -> dict[str, Any]:
        return {"run_id": lease.run_id, "worker_id": lease.worker_id, "epoch": lease.epoch}

    def _append_statement(
        self, lease: Lease, events: Sequence[EventDraft], token: str | None
    ) -> tuple[str, dict[str, Any]]:
        """The fenced append as a statement and its parameters. It returns the last
        seq, or no row when the lease is not held."""
        params = {
            **self._lease_params(lease),
            "n": len(events),
            "types": [e.type for e in events],
            "datas": [e.encoded or dumps(e.data) for e in events],
            "token": token,
        }
        return self._q["append"], params

    def _carried_statement(self, lease: Lease, lent: Lent) -> tuple[str, dict[str, Any]]:
        """The append a checkpoint write carries: the same, and also the write's fence
        (it raises when the lease is not held)."""
        _, params = self._append_statement(lease, lent.events, lent.token)
        return self._q["carried_append"], params

    async def append(
        self, lease: Lease, events: Sequence[EventDraft], token: str | None = None
    ) -> int:
        if not events:
            raise ValueError("append needs at least one event")
        async with self.pool.connection() as conn:
            cur = await conn.execute(*self._append_statement(lease, events, token))
            rows = await cur.fetchall()
        if not rows:
            raise LeaseLost.of(lease.run_id, lease.epoch)
        seq: int = rows[0]["seq"]
        return seq

    async def finish(
        self,
        lease: Lease,
        status: RunStatus,
        event: EventDraft,
        *,
        result: Any = None,
        error: dict[str, Any] | None = None,
    ) -> int:
        rows = await self._fetch(
            "finish",
            {
                **self._lease_params(lease),
                "status": status.value,
                "result": dumps_or_none(result),
                "error": dumps_or_none(error),
                "type": event.type,
                "data": dumps(event.data),
            },
        )
        if not rows:
            raise LeaseLost.of(lease.run_id, lease.epoch)
        # This process's own waiters on the result and followers of the stream need not
        # wait for the NOTIFY to come back through the listener (it wakes them again,
        # which costs them one read that finds nothing new).
        self.hub.publish(STATUS, lease.run_id)
        self.hub.publish(EVENTS, lease.run_id)
        seq: int = rows[0]["seq"]
        return seq


@contextmanager
def _thread_refusal(new: NewRun) -> Iterator[None]:
    """The insert's refusal of another owner's thread (``outlast_thread_refused``, OL002:
    the statement, and with it the transaction, wrote nothing) as ``ThreadUnavailable``."""
    try:
        yield
    except psycopg.Error as exc:
        if exc.sqlstate == THREAD_REFUSED:
            raise thread_refused(new.thread_id) from None
        raise
