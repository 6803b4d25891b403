"""Stream tokens: what a browser's ``EventSource`` carries instead of an API key.

``EventSource`` cannot send headers, and a key in a URL ends up in access logs, proxy logs
and the browser's history. So a page mints a token for one run's stream with an
authenticated call (``POST /v1/runs/{id}/stream-token``) and opens
``/v1/runs/{id}/events?stream_token=…``. The token names the run and the principal and
expires (``OUTLAST_STREAM_TOKEN_TTL``, 5 minutes: long enough for ``EventSource``'s own
reconnects; a page that is refused mints another). It is an HMAC under a key derived from
``OUTLAST_SECRET_KEYS``, so any process that shares the keys checks it, and nothing is
stored. An API key in a URL (``?access_token=``) is refused, saying what to do instead.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from outlast.secretbox import SecretBox

PURPOSE = b"outlast stream token"
PREFIX = "st1."


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True, slots=True)
class Granted:
    principal: str
    run_id: str
    expires_at: float  # unix time


def mint(box: SecretBox, principal: str, run_id: str, ttl: float) -> tuple[str, float]:
    expires = time.time() + ttl
    claims = _b64(json.dumps({"p": principal, "r": run_id, "e": round(expires, 3)}).encode())
    mac = hmac.new(box.derive(PURPOSE), claims.encode(), hashlib.sha256).digest()
    return f"{PREFIX}{claims}.{_b64(mac)}", expires


def check(box: SecretBox, token: str, run_id: str) -> Granted | str:
    """The grant, or why the token does not open this run's stream."""
    if not token.startswith(PREFIX) or token.count(".") != 2:
        return "not a stream token"
    claims, _, mac = token[len(PREFIX) :].partition(".")
    want = hmac.new(box.derive(PURPOSE), claims.encode(), hashlib.sha256).digest()
    try:
        if not hmac.compare_digest(_unb64(mac), want):
            return "not a stream token of this server"
        data = json.loads(_unb64(claims))
    except (ValueError, TypeError):
        return "not a stream token"
    if data.get("r") != run_id:
        return "the stream token is for another run"
    if float(data.get("e", 0)) <= time.time():
        return "the stream token expired; mint another (POST /v1/runs/{id}/stream-token)"
    return Granted(str(data.get("p", "")), run_id, float(data["e"]))
