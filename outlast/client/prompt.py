"""Answering human and auth waits from the terminal, without ever blocking the stream.

Reading stdin blocks, and a wait can end while a person is still typing (someone answered
from another client). So lines are read by one daemon thread, only when a prompt asks for
one, straight from the file descriptor: a thread stuck in ``os.read`` holds no Python
lock and cannot stall the interpreter's exit. A line that arrives after its prompt was
withdrawn goes to the next prompt if there is one, and is dropped otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from outlast.client.api import Api, Problem
from outlast.client.display import Display
from outlast.vocabulary import WaitKind

ANSWERABLE = frozenset({WaitKind.HUMAN, WaitKind.AUTH})


class LineReader:
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._want = threading.Event()
        self._thread: threading.Thread | None = None
        self._waiter: asyncio.Future[str | None] | None = None
        self._reading = False
        self.eof = False

    async def readline(self, secret: bool = False) -> str | None:
        """The next line without its newline, or ``None`` once stdin is closed. A
        ``secret`` line (credentials) is not echoed by a terminal."""
        if self.eof:
            return None
        with _no_echo(self._fd if secret else None):
            return await self._next_line()

    async def _next_line(self) -> str | None:
        waiter: asyncio.Future[str | None] = self._loop.create_future()
        self._waiter = waiter
        if not self._reading:
            self._reading = True
            self._want.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="stdin", daemon=True)
                self._thread.start()
        try:
            return await waiter
        finally:
            if self._waiter is waiter:
                self._waiter = None

    def _run(self) -> None:
        pending = b""
        while True:
            self._want.wait()
            self._want.clear()
            while b"\n" not in pending:
                try:
                    chunk = os.read(self._fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    self._loop.call_soon_threadsafe(self._deliver, None)
                    return
                pending += chunk
            raw, _, pending = pending.partition(b"\n")
            line = raw.decode(errors="replace").rstrip("\r")
            self._loop.call_soon_threadsafe(self._deliver, line)

    def _deliver(self, line: str | None) -> None:
        # The line goes to whichever prompt is asking now, which may be a newer one than
        # the prompt that started this read.
        self._reading = False
        self.eof = self.eof or line is None
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(line)


@contextlib.contextmanager
def _no_echo(fd: int | None) -> Iterator[None]:
    """Echo off for the duration; restored however the read ends (Ctrl-C included), so
    the terminal is never left silent."""
    if fd is None or not os.isatty(fd):
        yield
        return
    import termios

    saved = termios.tcgetattr(fd)
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def wants_text(schema: Any) -> bool:
    return schema is None or (isinstance(schema, dict) and schema.get("type") == "string")


def parse_value(line: str, schema: Any) -> Any:
    """The answer as the wait's schema wants it: free text for string (or no) schemas."""
    return line if wants_text(schema) else json.loads(line)


class Prompter:
    """Asks about one open wait at a time, oldest first (parallel branches can wait at
    once); a question is withdrawn as soon as its wait ends, however it ended."""

    def __init__(self, api: Api, run_id: str, display: Display, reader: LineReader | None):
        self._api = api
        self._run_id = run_id
        self._display = display
        self._reader = reader
        self._open: dict[Any, dict[str, Any]] = {}  # insertion order = oldest first
        self._task: asyncio.Task[None] | None = None
        self._asking: Any = None
        # An answer already on its way is not cut off when its wait ends meanwhile (that
        # end is most likely the answer itself): its outcome is still worth a line.
        self._sending: set[asyncio.Task[None]] = set()
        self._in_flight: set[asyncio.Task[None]] = set()

    @property
    def can_ask(self) -> bool:
        return self._reader is not None and not self._reader.eof

    def wait_started(self, wait: dict[str, Any]) -> None:
        if self.can_ask and wait.get("kind") in ANSWERABLE:
            self._open.setdefault(wait.get("id"), wait)
            self._next()

    def wait_ended(self, wait_id: Any) -> None:
        self._open.pop(wait_id, None)
        if self._task is not None and wait_id == self._asking:
            self._withdraw()
            self._next()

    def _next(self) -> None:
        if self._task is not None or not self.can_ask or not self._open:
            return
        wait_id, wait = next(iter(self._open.items()))
        self._asking = wait_id
        self._task = asyncio.get_running_loop().create_task(self._ask(wait))
        self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        if task is not self._task:
            return  # withdrawn earlier
        self._open.pop(self._asking, None)  # answered, refused or no more input: not again
        self._task, self._asking = None, None
        self._next()

    def _withdraw(self) -> asyncio.Task[None] | None:
        """Cancel the question unless its answer is already on the way; return it if
        cancelled, so a caller can let it put the display back before going on."""
        task, self._task, self._asking = self._task, None, None
        if task is None:
            return None
        if task in self._sending:
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
            return None
        task.cancel()
        return task

    async def close(self, grace: float = 5.0) -> None:
        self._open.clear()
        cancelled = self._withdraw()
        if cancelled is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await cancelled
        if self._in_flight:
            _, late = await asyncio.wait(set(self._in_flight), timeout=grace)
            for task in late:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _ask(self, wait: dict[str, Any]) -> None:
        try:
            await self._ask_until_answered(wait)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken prompt must not end the follow
            self._display.notice(f"could not send the answer: {exc}")

    async def _read(self, text: str, schema: Any, secret: bool) -> str | None:
        assert self._reader is not None
        self._display.pause()
        try:
            self._display.console.print(f"? {text}", markup=False, highlight=False)
            if not wants_text(schema):
                self._display.console.print(
                    f"  (answer as JSON: {json.dumps(schema)})", style="dim", markup=False
                )
            return await self._reader.readline(secret=secret)
        finally:
            self._display.resume()

    async def _ask_until_answered(self, wait: dict[str, Any]) -> None:
        prompt = wait.get("prompt")
        text = prompt if isinstance(prompt, str) else json.dumps(prompt, indent=2)
        schema = wait.get("schema")
        me = asyncio.current_task()
        assert me is not None
        while True:
            line = await self._read(text or "answer", schema, wait.get("kind") == "auth")
            if line is None:
                self._display.notice(
                    f"stdin is closed; answer with: outlast answer {self._run_id} VALUE "
                    f"--server {self._api.server}"
                )
                return
            try:
                value = parse_value(line, schema)
            except ValueError as exc:
                self._display.notice(f"that is not valid JSON ({exc}); try again")
                continue
            self._sending.add(me)
            try:
                response = await self._api.call(
                    "POST",
                    f"/v1/runs/{self._run_id}/input",
                    json={"wait_id": wait.get("id"), "value": value},
                    # one key per answer, kept across retries: a lost 202 is not a 409
                    headers={"Idempotency-Key": uuid.uuid4().hex},
                )
            finally:
                self._sending.discard(me)
            if response.is_success:
                self._display.notice("answer sent")
                return
            problem = Problem.of(response)
            if response.status_code == 409:
                self._display.notice("already answered elsewhere")
                return
            if response.status_code == 422:
                self._display.notice(f"not accepted: {problem.detail or problem.title}")
                if me is self._task:
                    continue
                return  # the wait ended meanwhile; nothing left to ask
            self._display.notice(f"answer refused: {problem}")
            return
