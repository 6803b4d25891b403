"""Threads and LangGraph runs of the LangGraph face, written once for both backends over
``_rtx()`` / ``_wtx()`` and the named queries of ``queries_langgraph.sql``."""

from __future__ import annotations

import abc
from contextlib import AbstractAsyncContextManager

from outlast.store.common import Tx


class LangGraphOps(abc.ABC):
    @abc.abstractmethod
    def _rtx(self) -> AbstractAsyncContextManager[Tx]: ...

    @abc.abstractmethod
    def _wtx(self) -> AbstractAsyncContextManager[Tx]: ...
