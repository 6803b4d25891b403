"""``outlast demo``: one real run of the reference agent, narrated, on the embedded store.

What it shows, in the order a run meets it:

1. the run has an identity before any work starts, and a retried request (same
   ``Idempotency-Key``) gets the same run;
2. the client disconnects on purpose, the run goes on, and the client reattaches with
   ``Last-Event-ID`` and gets exactly what it missed;
3. the agent asks a person; a scripted answer arrives through ``/input``;
4. a budget soft limit opens a checkpoint: a person grants a tranche;
5. the server (and its worker) is SIGKILLed the instant the email leaves, before the
   ledger hears back; a second server takes the run over from its last checkpoint;
6. the email is not sent twice: the ledger asks the outbox (``reconcile``);
7. across three connections the client saw every event once, in order.

Each check is a step; the demo ends with a table of them and exits non-zero if any
did not happen. The run's model is the scripted offline model unless ``OUTLAST_MODEL``
says otherwise (the script is what makes the path, and so the narration, repeatable).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import sqlite3
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
from rich.console import Console
from rich.table import Table

from outlast.demo.follower import Follower, Received
from outlast.demo.servers import ServerProcess
from outlast.graph.tools import outbox_messages
from outlast.vocabulary import EventType, RunStatus, Takeover

TASK = (
    "Search the notes, compute the total words, ask who gets the report, "
    "write a report and email it."
)
T = TypeVar("T")

ANSWER = "ana@example.com"
BUDGET = {"tool_calls": {"soft": 7, "hard": 20}}
TRANCHE = 4
# How long the demo waits for a step before it calls the step missing. A step takes a
# second or two on a laptop; on a loaded CI machine it can take fifty times that, and a
# step that really does not happen still ends the demo, only later.
PATIENCE = 300.0
EXPECTED = (
    "accepted",
    "disconnect and reattach",
    "a person answers",
    "budget checkpoint decides",
    "a worker is killed",
    "resumed elsewhere",
    "email sent once",
    "nothing lost or repeated",
)


class DemoStop(Exception):
    """A step did not happen; the steps after it cannot."""


@dataclass
class Step:
    name: str
    ok: bool
    detail: str


@dataclass
class Demo:
    console: Console
    folder: Path
    port: int
    model_delay: float = 0.05
    steps: list[Step] = field(default_factory=list)
    server: ServerProcess | None = None
    run_id: str = ""

    def check(self, name: str, ok: bool, detail: str) -> bool:
        self.steps.append(Step(name, ok, detail))
        mark = "[green]✓[/]" if ok else "[red]✗[/]"
        self.console.print(f"  {mark} [bold]{name}[/]: {detail}")
        return ok

    def require(self, name: str, ok: bool, detail: str) -> None:
        if not self.check(name, ok, detail):
            raise DemoStop(name)

    def say(self, text: str) -> None:
        self.console.print(f"\n[bold cyan]▶[/] {text}")

    def show(self, event: Received) -> None:
        data = event.data
        detail = ""
        if event.type == EventType.NODE_UPDATED:
            detail = str(data.get("node", ""))
        elif event.type.startswith("effect."):
            detail = f"{data.get('tool', '')} {data.get('status', '')}".strip()
        elif event.type == EventType.WAIT_STARTED:
            detail = str((data.get("wait") or {}).get("kind", ""))
        elif event.type == EventType.RUN_STARTED:
            detail = f"attempt {data.get('attempt', '?')}"
        if event.type not in (EventType.MESSAGE_DELTA, EventType.ACTIVITY):
            self.console.print(
                f"    [dim]#{event.seq:<3} conn {event.connection}  {event.type}  {detail}[/]"
            )

    async def run(self) -> bool:
        if self.folder.exists():
            shutil.rmtree(self.folder)
        self.folder.mkdir(parents=True)
        self.say(
            f"Starting [bold]outlast serve[/] on the embedded SQLite store in {self.folder}/ "
            "(armed to die, with SIGKILL, the instant the email leaves)"
        )
        self.server = ServerProcess(
            "server-1", self.folder, self.port, "effect.after_call", or_any=True
        )
        self.port = self.server.port  # server-2 serves the same address, for the client
        await asyncio.to_thread(self.server.ready)
        async with httpx.AsyncClient(base_url=self.server.url, timeout=30) as client:
            try:
                await self._scenario(client)
            except DemoStop as stop:
                self.console.print(f"  [red]stopped: '{stop}' did not happen[/]")
            except (TimeoutError, LookupError, httpx.HTTPError, RuntimeError) as exc:
                self.check("the demo ran to its end", False, f"{type(exc).__name__}: {exc}")
        done = {step.name for step in self.steps}
        for name in EXPECTED:
            if name not in done:
                self.steps.append(Step(name, False, "did not happen"))
        return all(step.ok for step in self.steps)

    async def _scenario(self, client: httpx.AsyncClient) -> None:
        follower = Follower(client, "", on_event=self.show)
        await self._accept(client, follower)
        await self._disconnect(client, follower)
        reader = asyncio.create_task(follower.follow())
        try:
            await self._answer_question(client, follower)
            await self._budget(client, follower)
            await self._crash(follower)
            await asyncio.wait_for(follower.ended.wait(), PATIENCE)
        finally:
            reader.cancel()
        await self._verify(client, follower)

    async def _accept(self, client: httpx.AsyncClient, follower: Follower) -> None:
        self.say("POST /v1/runs: the run gets its identity before any work starts")
        body = {
            "graph": "agent",
            "input": {"messages": [{"role": "user", "content": TASK}]},
            "config": {"configurable": {"model_delay": self.model_delay}},
            "budget": BUDGET,
        }
        key = f"demo-{uuid.uuid4()}"
        first = await client.post("/v1/runs", json=body, headers={"Idempotency-Key": key})
        again = await client.post("/v1/runs", json=body, headers={"Idempotency-Key": key})
        snap = first.json()
        if first.status_code != 202:
            self.require("accepted", False, f"{first.status_code}: {snap.get('detail', snap)}")
        self.run_id = follower.run_id = snap["id"]
        self.console.print(
            f"  {first.status_code} Location: {first.headers.get('location')}  "
            f"model: [bold]{snap.get('model')}[/]  task: {TASK!r}"
        )
        self.require(
            "accepted",
            first.status_code == 202 and again.json()["id"] == self.run_id,
            f"202 with an id; the retried POST (same Idempotency-Key) returned the same run "
            f"(Idempotent-Replayed: {again.headers.get('idempotent-replayed')})",
        )

    async def _disconnect(self, client: httpx.AsyncClient, follower: Follower) -> None:
        self.say("Streaming the events, then closing the connection on purpose")
        await asyncio.wait_for(
            follower.read(until=lambda e: e.type == EventType.NODE_UPDATED), PATIENCE
        )
        cut = follower.last_seq
        self.console.print(f"  [yellow]connection closed after event #{cut}[/]; the run goes on")
        await asyncio.sleep(1.0)  # let it run a moment with nobody watching
        snap = await self._moved_past(client, cut)
        moved = snap["last_seq"] > cut
        self.console.print(f"  meanwhile the run reached event #{snap['last_seq']}")
        self.say(f"Reattaching with Last-Event-ID: {cut}")
        task = asyncio.create_task(follower.read(until=lambda e: e.seq >= snap["last_seq"]))
        await asyncio.wait_for(task, PATIENCE)
        resumed = [e.seq for e in follower.events if e.connection == 2]
        self.require(
            "disconnect and reattach",
            moved and bool(resumed) and resumed[0] == cut + 1,
            f"closed at #{cut}; the run went on to #{snap['last_seq']}; the second connection "
            f"started at #{resumed[0] if resumed else '?'}",
        )

    async def _while_serving(self, waiting: Awaitable[T], step: str) -> T:
        """What ``waiting`` waits for, unless server-1 exits first. It is armed to die when
        the email leaves, so if the run gets there before this step, nothing can happen
        any more: the step fails at once instead of waiting out PATIENCE."""
        assert self.server is not None
        task = asyncio.ensure_future(waiting)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.5)
                if done:
                    return task.result()
                code = self.server.proc.poll()
                if code is not None:
                    self.require(
                        step,
                        False,
                        f"{self.server.name} exited ({code}) before it: the run reached the "
                        f"email first (usage then: {await self._usage()})",
                    )
        finally:
            task.cancel()

    async def _usage(self) -> Any:
        """The run's usage as stored, read from the store's files (the server is gone)."""

        def read() -> Any:
            with contextlib.closing(sqlite3.connect(self.folder / "outlast.db")) as db:
                row = db.execute("SELECT usage FROM outlast_runs WHERE id = ?", (self.run_id,))
                found = row.fetchone()
            return json.loads(found[0]) if found and found[0] else None

        return await asyncio.to_thread(read)

    async def _moved_past(self, client: httpx.AsyncClient, seq: int) -> dict[str, Any]:
        """The run's snapshot once its log is past ``seq`` (or the last one read, when it
        does not get there within PATIENCE: the step then shows it did not move)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + PATIENCE
        while True:
            snap: dict[str, Any] = (await client.get(f"/v1/runs/{self.run_id}")).json()
            if snap["last_seq"] > seq or loop.time() >= deadline:
                return snap
            await asyncio.sleep(0.2)

    async def _answer_question(self, client: httpx.AsyncClient, follower: Follower) -> None:
        self.say("Waiting for the agent to ask a person something")
        event = await follower.wait_for(_wait_of("human"), PATIENCE)
        wait = event.data["wait"]
        self.console.print(f"  the agent asks: [italic]{wait.get('prompt')}[/]")
        snap = (await client.get(f"/v1/runs/{self.run_id}")).json()
        self.console.print(
            f"  status [bold]{snap['status']}[/], waiting on {wait['kind']} since "
            f"{wait.get('since')}: no worker, no coroutine, a row and a checkpoint"
        )
        reply = await client.post(
            f"/v1/runs/{self.run_id}/input", json={"wait_id": wait["id"], "value": ANSWER}
        )
        self.require(
            "a person answers",
            reply.status_code == 202 and snap["status"] == RunStatus.WAITING,
            f"waited as '{snap['status']}'; the scripted answer {ANSWER!r} was accepted "
            f"({reply.status_code})",
        )

    async def _budget(self, client: httpx.AsyncClient, follower: Follower) -> None:
        self.say(f"Budget: tool calls soft {BUDGET['tool_calls']['soft']}, hard 20")
        checkpoint = await self._while_serving(
            follower.wait_for(lambda e: e.type == EventType.BUDGET_CHECKPOINT, PATIENCE),
            "budget checkpoint decides",
        )
        event = await follower.wait_for(_wait_of("budget"), PATIENCE)
        self.console.print(
            f"  soft limit reached ({checkpoint.data.get('dimension')} "
            f"{checkpoint.data.get('used')}): a checkpoint, not a guillotine"
        )
        reply = await client.post(
            f"/v1/runs/{self.run_id}/input",
            json={"wait_id": event.data["wait"]["id"], "value": _tranche()},
        )
        started = await follower.wait_for(
            lambda e: e.seq > event.seq and e.type == EventType.RUN_STARTED, PATIENCE
        )
        self.require(
            "budget checkpoint decides",
            reply.status_code == 202,
            f"a person granted {TRANCHE} more tool calls; the run went on (#{started.seq})",
        )

    async def _crash(self, follower: Follower) -> None:
        assert self.server is not None
        self.say("The agent sends its email; server-1 dies (SIGKILL) the instant it leaves")
        code = await asyncio.to_thread(self.server.proc.wait, PATIENCE)
        sent = len(outbox_messages(self.folder / "outbox"))
        self.console.print(
            f"  server-1 exit code {code}; outbox holds {sent} message(s); "
            f"the client lost its connection after #{follower.last_seq}"
        )
        self.require(
            "a worker is killed",
            code == -signal.SIGKILL and sent == 1,
            f"killed by SIGKILL after the email left and before the ledger recorded it "
            f"(client at #{follower.last_seq})",
        )
        self.say("Starting server-2 on the same folder; the client keeps retrying")
        self.server = ServerProcess("server-2", self.folder, self.port)
        await asyncio.to_thread(self.server.ready)

    async def _verify(self, client: httpx.AsyncClient, follower: Follower) -> None:
        snap = (await client.get(f"/v1/runs/{self.run_id}")).json()
        types = [e.type for e in follower.events]
        takeovers = [
            e.data.get("takeover") for e in follower.events if e.type == EventType.RUN_REQUEUED
        ]
        # the killed attempt had saved steps: a takeover, not a failure of the run's own
        self.check(
            "resumed elsewhere",
            snap["status"] == RunStatus.COMPLETED
            and takeovers == [Takeover.PROGRESSED]
            and snap["attempts"] == 1,
            f"status {snap['status']}; server-2 went on from the last checkpoint "
            f"({', '.join(map(str, takeovers))}: the crash spent none of the run's "
            f"attempts, {snap['attempts']} so far)",
        )
        sent = outbox_messages(self.folder / "outbox")
        self.check(
            "email sent once",
            len(sent) == 1 and EventType.EFFECT_UNKNOWN in types,
            f"{len(sent)} message in the outbox; after the crash the ledger found the call "
            "unfinished and asked the outbox (reconcile) instead of sending again",
        )
        seqs = [e.seq for e in follower.events]
        log = await _whole_log(client, self.run_id)
        self.check(
            "nothing lost or repeated",
            seqs == log and seqs == list(range(1, len(seqs) + 1)),
            f"{len(seqs)} events over {follower.connections} connections "
            f"({len(follower.drops)} cut by the server's death), each exactly once, in order",
        )
        final = next(
            (m.get("content") for m in reversed(snap["result"]["messages"]) if m["type"] == "ai"),
            "",
        )
        self.console.print(f"\n  the agent's answer: [italic]{final}[/]")

    def summary(self) -> None:
        table = Table(title="outlast demo")
        table.add_column("step")
        table.add_column("", justify="center")
        table.add_column("what happened")
        for step in self.steps:
            table.add_row(step.name, "[green]✓[/]" if step.ok else "[red]✗[/]", step.detail)
        self.console.print()
        self.console.print(table)
        if self.server is not None and self.run_id:
            base = self.server.url
            self.console.print(f"events:   {base}/v1/runs/{self.run_id}/events")
            self.console.print(f"snapshot: {base}/v1/runs/{self.run_id}")
        failed = [s.name for s in self.steps if not s.ok]
        if failed:
            self._server_logs()
        verdict = "[red]FAILED: " + ", ".join(failed) + "[/]" if failed else "[green]all OK[/]"
        self.console.print(f"result: {verdict} ({len(self.steps)} steps)")

    def _server_logs(self, lines: int = 30) -> None:
        """The end of each server's log: what a failed demo needs to be understood where
        the folder is gone afterwards (a CI machine)."""
        for log in sorted(self.folder.glob("server-*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            self.console.print(f"\n[bold]{log.name}[/] (last {len(tail)} lines)")
            for line in tail:
                self.console.print(f"  {line}", markup=False, highlight=False)


def _wait_of(kind: str) -> Any:
    return lambda e: (
        e.type == EventType.WAIT_STARTED and (e.data.get("wait") or {}).get("kind") == kind
    )


def _tranche() -> dict[str, Any]:
    return {"action": "continue", "tranche": TRANCHE}


async def _whole_log(client: httpx.AsyncClient, run_id: str) -> list[int]:
    """The run's log read again from the start, in one go, to compare against."""
    check = Follower(client, run_id)
    await check.read()
    return [e.seq for e in check.events]
