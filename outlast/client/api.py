"""HTTP calls that outlive an unreachable or restarting server.

Every call is retried with backoff while the server cannot be reached or says it is
briefly unable to answer; only a deadline (one-shot commands) or Ctrl-C ends that. A retry
is always safe here: run creation and answers carry an idempotency key (a retry of one
the server already took is recognised, ``Idempotent-Replayed``), cancel is idempotent,
and any other second answer to a wait is refused (``409``) rather than applied twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from outlast.config import ClientSettings
from outlast.retry import Backoff, RetryPolicy

DEFAULT_SERVER = "http://127.0.0.1:8000"
CONNECT_TIMEOUT = 5.0
# Longer than the server's keepalive interval (15 s), so a silent stream means a dead one.
STREAM_READ_TIMEOUT = 45.0
REQUEST_TIMEOUT = 30.0
_RETRY_STATUSES = frozenset({429, 502, 503, 504})


def default_server() -> str:
    return ClientSettings().server or DEFAULT_SERVER


# 0.2 s doubling to 5 s; a stream starts over once the server answers again.
RETRY = RetryPolicy(initial_interval=0.2, maximum_interval=5.0)


class Unreachable(Exception):
    """The deadline passed before the server gave a usable answer."""


class Refused(Exception):
    """The server answered with a problem that retrying cannot fix."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class Problem:
    """An ``application/problem+json`` answer, or the best reading of a non-problem one."""

    status: int
    title: str
    detail: str

    @classmethod
    def of(cls, response: httpx.Response) -> Problem:
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return cls(response.status_code, response.reason_phrase, response.text[:500])
        return cls(
            response.status_code,
            str(body.get("title") or response.reason_phrase),
            str(body.get("detail") or ""),
        )

    def __str__(self) -> str:
        return f"{self.title} ({self.status}): {self.detail}" if self.detail else self.title


def retryable(response: httpx.Response) -> bool:
    if response.status_code in _RETRY_STATUSES:
        return True
    if response.status_code >= 500:
        try:
            body = response.json()
        except ValueError:
            return False
        return isinstance(body, dict) and body.get("retryable") is True
    return False


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Api:
    """The server's HTTP API for one command; ``notice`` hears about each retry."""

    def __init__(self, server: str, notice: Callable[[str], None]) -> None:
        self.server = server.rstrip("/")
        self.notice = notice
        self.client = httpx.AsyncClient(
            base_url=self.server,
            timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT),
            headers={"accept": "application/json"},
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        deadline: float | None = None,
    ) -> httpx.Response:
        """The first answer that is not a transient failure; ``deadline`` is monotonic."""
        backoff = Backoff(RETRY)
        while True:
            timeout = REQUEST_TIMEOUT
            if deadline is not None:
                timeout = max(0.05, min(timeout, deadline - time.monotonic()))
            try:
                response = await self.client.request(
                    method, path, json=json, params=params, headers=headers, timeout=timeout
                )
            except httpx.TransportError:
                why = f"server unreachable at {self.server}"
            else:
                if not retryable(response):
                    return response
                why = f"server at {self.server} answered {Problem.of(response)}"
            delay = backoff.next()
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Unreachable(why)
                delay = min(delay, remaining)
            self.notice(f"{why}, retrying in {delay:.1f} s…")
            await asyncio.sleep(delay)
