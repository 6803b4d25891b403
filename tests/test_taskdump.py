"""SIGUSR1 prints every task's chain of awaits (outlast/taskdump.py)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from outlast import taskdump


async def _innermost_wait(gate: asyncio.Event) -> None:
    await gate.wait()


async def _outer(gate: asyncio.Event) -> None:
    await _innermost_wait(gate)


async def test_sigusr1_prints_each_tasks_awaits_down_to_the_innermost(
    capfd: pytest.CaptureFixture[str],
) -> None:
    loop = asyncio.get_running_loop()
    gate = asyncio.Event()
    task = asyncio.create_task(_outer(gate), name="stuck-one")
    await asyncio.sleep(0)  # the task reaches its wait
    taskdump.install(loop)
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        err = ""
        for _ in range(500):  # the handler runs on one of the loop's next turns
            await asyncio.sleep(0.01)
            err += capfd.readouterr().err
            if "--- end ---" in err:
                break
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        gate.set()
        await task
    assert f"pid {os.getpid()}" in err
    dumped = err.split("task 'stuck-one'", 1)[1].split("\ntask ", 1)[0].split("\n---")[0]
    names = [line.rsplit(" in ", 1)[1] for line in dumped.strip().splitlines()]
    assert names[:3] == ["_outer", "_innermost_wait", "wait"]


def test_an_existing_handler_is_left_alone() -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    before = signal.signal(signal.SIGUSR1, mine)
    try:
        loop = asyncio.new_event_loop()
        try:
            taskdump.install(loop)
        finally:
            loop.close()
        assert signal.getsignal(signal.SIGUSR1) is mine
    finally:
        signal.signal(signal.SIGUSR1, before)
