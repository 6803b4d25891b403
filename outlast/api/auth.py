"""Principals: who is calling, from a bearer API key, and how fast they may call.

Keys come from ``OUTLAST_API_KEYS`` (``principal:key`` pairs, comma-separated) or from
``OUTLAST_API_KEYS_FILE`` (JSON: ``{"keys": [{"principal": "alice", "sha256": "<hex>"}]}``,
made with ``outlast key new``). Only SHA-256 digests are kept, in the file and in memory:
a leaked file or a memory dump does not give out a working key. A key is looked up by its
digest, so the lookup's timing depends on the digest, never on how much of a guess was
right.

With keys configured every route needs ``Authorization: Bearer <key>`` (or ``x-api-key:
<key>``, as LangGraph's SDKs send it), except the
health checks, the console's static page and the OpenAPI document (they hold no data).
A key is never taken from a URL (it would be in every access log): a browser's
``EventSource``, which cannot send headers, opens a run's events stream with a stream
token minted for it (``api/stream_tokens.py``). Without keys every caller is the anonymous
principal ``""`` and the server refuses to listen beyond loopback unless told otherwise
(``cli.py``).

The request rate is limited per principal with a token bucket (``OUTLAST_RATE_LIMIT``
requests per second, bursts of twice that); a refusal is ``429`` with ``Retry-After``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from outlast.api import stream_tokens
from outlast.api.problems import send_problem
from outlast.errors import OutlastError
from outlast.secretbox import SecretBox

# An A2A Agent Card is public: it is how a caller learns how to call (and authenticate).
PUBLIC = re.compile(
    r"^/(healthz|readyz|docs|docs/.*|openapi\.json|console/.*|info|ok"
    r"|a2a/[^/]+/\.well-known/agent-card\.json)?$"
)
STREAM = re.compile(r"^/v1/runs/(?P<run>[^/]+)/events$")
# Query parameters that carry a credential: refused or redacted wherever they appear.
SECRET_PARAMS = ("access_token", "stream_token", "api_key", "apikey", "token", "key")


class KeysInvalid(OutlastError):
    title = "API keys are misconfigured"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KeyRing:
    """Key digest → principal."""

    principals: dict[str, str] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return bool(self.principals)

    @classmethod
    def load(cls, pairs: str | None, path: Path | None) -> KeyRing:
        found: dict[str, str] = {}
        for item in (pairs or "").split(","):
            if not item.strip():
                continue
            principal, sep, key = item.strip().partition(":")
            if not sep or not principal or len(key) < 16:
                raise KeysInvalid(
                    "OUTLAST_API_KEYS: expected principal:key pairs, keys of 16+ characters"
                )
            found[digest(key)] = principal
        if path is not None:
            try:
                entries = json.loads(path.read_text(encoding="utf-8"))["keys"]
                for entry in entries:
                    sha = str(entry["sha256"]).lower()
                    if not re.fullmatch(r"[0-9a-f]{64}", sha) or not entry["principal"]:
                        raise ValueError(f"bad entry {entry!r}")
                    found[sha] = str(entry["principal"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise KeysInvalid(f"{path}: {exc}") from exc
        return cls(found)

    def principal_for(self, key: str) -> str | None:
        return self.principals.get(digest(key))


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class RateLimiter:
    def __init__(self, per_second: float) -> None:
        self.rate = per_second
        self.burst = max(1.0, 2 * per_second)
        self._buckets: dict[str, _Bucket] = {}

    def wait_needed(self, principal: str) -> float:
        """0 when the request may go now; else the seconds until it could."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        bucket = self._buckets.setdefault(principal, _Bucket(self.burst, now))
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        if bucket.tokens >= 1:
            bucket.tokens -= 1
            return 0.0
        return (1 - bucket.tokens) / self.rate


def _token(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
        if name == b"x-api-key":  # what LangGraph's SDKs send (LANGGRAPH_API_KEY)
            token = value.decode("latin-1").strip()
            return token or None
    return None


def _query(scope: Scope, name: str) -> str | None:
    found = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(name)
    return found[0] if found else None


KEY_IN_URL = (
    "API keys are not accepted in URLs (they end up in logs); send Authorization: Bearer "
    "or X-Api-Key, or, from a browser's EventSource, a stream token "
    "(POST /v1/runs/{id}/stream-token)"
)


class Authenticate:
    """Sets ``request.state.principal``; refuses unknown keys and callers over their rate."""

    def __init__(
        self, app: ASGIApp, keys: KeyRing, limiter: RateLimiter, box: SecretBox | None = None
    ) -> None:
        self.app = app
        self.keys = keys
        self.limiter = limiter
        self.box = box  # checks stream tokens

    def _streamer(self, scope: Scope) -> str | None:
        """The principal of a valid stream token for the run whose events are asked;
        raises ``_Refused`` for a token that does not open them."""
        stream = STREAM.match(scope["path"])
        token = _query(scope, "stream_token")
        if stream is None or token is None or self.box is None:
            return None
        granted = stream_tokens.check(self.box, token, stream["run"])
        if isinstance(granted, str):
            raise _Refused(granted)
        return granted.principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        principal = ""
        public = bool(PUBLIC.match(scope["path"]))
        if self.keys.enabled and not public:
            token = _token(scope)
            try:
                found = self.keys.principal_for(token) if token else self._streamer(scope)
            except _Refused as refused:
                found, detail = None, str(refused)
            else:
                detail = "an API key is required" if token is None else "unknown API key"
            if found is None:
                if token is None and _query(scope, "access_token") is not None:
                    detail = KEY_IN_URL
                await send_problem(
                    send, 401, detail, title="Unauthorized", headers={"WWW-Authenticate": "Bearer"}
                )
                return
            principal = found
        if not public:
            wait = self.limiter.wait_needed(principal)
            if wait > 0:
                await send_problem(
                    send,
                    429,
                    f"more than {self.limiter.rate:g} requests per second "
                    "(OUTLAST_RATE_LIMIT); slow down",
                    title="Too many requests",
                    retryable=True,
                    headers={"Retry-After": str(max(1, math.ceil(wait)))},
                    limit="rate_limit",
                )
                return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket upgrade carries its key in the same headers as any request (a
        browser's cannot: it goes through a server of its own, as its EventSource does).
        A refused upgrade is closed before it is accepted, which clients read as 403."""
        principal = ""
        if self.keys.enabled:
            token = _token(scope)
            found = self.keys.principal_for(token) if token else None
            if found is None or self.limiter.wait_needed(found) > 0:
                await send({"type": "websocket.close", "code": 4401 if found is None else 4429})
                return
            principal = found
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)


class _Refused(Exception):
    """A stream token that does not open this stream (says why)."""
