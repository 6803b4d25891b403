"""Runs on a thread (``/v1/threads``): a thread is one checkpoint lineage, so one of its
runs is active at a time. Written once for both backends in ``store/run_ops.py``; the
LangGraph face's threads are ``lg.py``'s."""

from __future__ import annotations

import abc
from typing import Protocol

from outlast.store.hub import Notifying
from outlast.store.records import NewRun, Run


class ThreadStore(Notifying, Protocol):
    @abc.abstractmethod
    async def create_thread_run(self, new: NewRun, *, if_busy: str) -> tuple[Run, bool]:
        """``create_run`` on a thread, refused with ThreadBusy while another run of the
        thread is active, unless ``if_busy == "enqueue"``; the check and the insert are
        one transaction, serialized per thread, so two clients cannot both see it idle."""

    @abc.abstractmethod
    async def latest_run(self, thread_id: str) -> Run | None:
        """The thread's most recently accepted run, or None."""
