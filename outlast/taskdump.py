"""``kill -USR1 <pid>``: every asyncio task of the process and what it awaits, on stderr.

A run that never ends while its lease keeps being renewed is a task waiting on something
that will not come; a thread dump (py-spy) shows only the event loop idling in ``select``.
What tells is each task's chain of awaits, innermost last: the statement, lock or queue it
sits on. The handler writes with ``os.write`` on the process's stderr, not through
logging, because the loop or the log handler may be what is stuck.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

# A chain deeper than this is a recursion, not a stack worth printing whole.
_DEPTH = 40


def _frames(awaitable: Any) -> Iterator[FrameType]:
    """The frames of a suspended coroutine and of what it awaits, outermost first.

    ``Task.get_stack`` gives only the task's own frame while it is suspended; the rest of
    the chain hangs off ``cr_await`` (coroutines) and ``gi_yieldfrom`` (generators).
    """
    for _ in range(_DEPTH):
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is not None:
            yield frame
        nxt = getattr(awaitable, "cr_await", None)
        if nxt is None:
            nxt = getattr(awaitable, "gi_yieldfrom", None)
        if nxt is None:
            return
        awaitable = nxt


def describe(task: asyncio.Task[Any]) -> str:
    lines = [f"task {task.get_name()!r}" + (" (done)" if task.done() else "")]
    for frame in _frames(task.get_coro()):
        code = frame.f_code
        lines.append(f"  {code.co_filename}:{frame.f_lineno} in {code.co_name}")
    return "\n".join(lines)


def dump(loop: asyncio.AbstractEventLoop) -> str:
    tasks = sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name())
    body = "\n".join(describe(t) for t in tasks)
    head = f"--- outlast task dump, pid {os.getpid()}, {len(tasks)} tasks ---"
    return f"{head}\n{body}\n--- end ---\n"


def install(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Dump on SIGUSR1 for the rest of the loop's life. Called where outlast's loop runs
    (``outlast worker``, the app's lifespan); a no-op where the platform has no SIGUSR1,
    off the main thread (a test client's loop), or where the embedding program already
    handles the signal: its handler is not ours to replace."""
    if not hasattr(signal, "SIGUSR1") or signal.getsignal(signal.SIGUSR1) != signal.SIG_DFL:
        return
    running = loop or asyncio.get_running_loop()

    def handler() -> None:
        os.write(sys.stderr.fileno(), dump(running).encode(errors="replace"))

    try:
        running.add_signal_handler(signal.SIGUSR1, handler)
    except (ValueError, RuntimeError, NotImplementedError):
        return  # not the main thread, or a loop without signal support
