"""User assistants of the LangGraph face, and their versions, written once for both
backends over ``_rtx()`` / ``_wtx()`` and the named queries of ``queries_assistants.sql``."""

from __future__ import annotations

import abc
from contextlib import AbstractAsyncContextManager

from outlast.store.common import Tx


class AssistantOps(abc.ABC):
    @abc.abstractmethod
    def _rtx(self) -> AbstractAsyncContextManager[Tx]: ...

    @abc.abstractmethod
    def _wtx(self) -> AbstractAsyncContextManager[Tx]: ...
