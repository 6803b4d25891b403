"""One attempt at a delivery: signed, sent to a checked address, bounded in time and in
what is read back.

Signed by the Standard Webhooks spec with its own package (``standardwebhooks``):
``webhook-id`` is the delivery's id, the same on every attempt, so a receiver drops a
duplicate by it; ``webhook-timestamp`` is when this attempt was signed (a receiver
refuses old ones: a replayed request fails); ``webhook-signature`` is ``v1,<base64>`` of
HMAC-SHA256 over ``id.timestamp.body``. A delivery without a secret (LangGraph's per-run
``webhook`` has none) carries the id and timestamp unsigned.

Redirects are not followed (a 3xx is a failed attempt, not a new destination that was
never checked), the whole attempt has one deadline, and at most ``READ_LIMIT`` bytes of
the answer are read, for the attempt's record.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Mapping

import httpx
from standardwebhooks.webhooks import Webhook as Signer

from outlast import __version__
from outlast.store.outbox import Outcome
from outlast.webhooks.urls import Target

READ_LIMIT = 4096
ERROR_LIMIT = 500


def headers_for(
    delivery_id: str, body: bytes, secret: str | None, now: dt.datetime | None = None
) -> dict[str, str]:
    signed_at = now or dt.datetime.now(dt.UTC)
    headers = {
        "content-type": "application/json",
        "user-agent": f"outlast/{__version__}",
        "webhook-id": delivery_id,
        "webhook-timestamp": str(int(signed_at.timestamp())),
    }
    if secret:
        headers["webhook-signature"] = Signer(secret).sign(delivery_id, signed_at, body.decode())
    return headers


async def send(
    client: httpx.AsyncClient,
    target: Target,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 (one deadline for connect, send and read together)
) -> Outcome:
    started = time.perf_counter()
    sent = {**headers, "host": target.host}
    extensions = {"sni_hostname": target.sni} if target.sni else {}
    try:
        async with asyncio.timeout(timeout):
            async with client.stream(
                "POST", target.url, content=body, headers=sent, extensions=extensions
            ) as response:
                answer = await _head_of(response)
                code = response.status_code
    except TimeoutError:
        return Outcome(None, f"no answer within {timeout:g} s", _ms(started))
    except httpx.HTTPError as exc:
        return Outcome(None, f"{type(exc).__name__}: {exc}"[:ERROR_LIMIT], _ms(started))
    if 200 <= code < 300:
        return Outcome(code, None, _ms(started))
    if 300 <= code < 400:
        where = response.headers.get("location", "")
        return Outcome(code, f"HTTP {code}: redirect to {where!r} not followed", _ms(started))
    text = answer.decode(errors="replace").strip()
    error = f"HTTP {code}: {text}" if text else f"HTTP {code}"
    return Outcome(code, error[:ERROR_LIMIT], _ms(started))


async def _head_of(response: httpx.Response) -> bytes:
    """At most READ_LIMIT bytes of the body; the rest is never read."""
    kept = b""
    async for chunk in response.aiter_raw():
        kept += chunk
        if len(kept) >= READ_LIMIT:
            break
    return kept[:READ_LIMIT]


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
