"""Where a webhook may be sent: by default only ``https`` to public addresses.

A subscriber chooses the URL and outlast makes the request, from inside the operator's
network: without a check, a subscription to ``http://169.254.169.254/`` or to a database
port on the LAN is a way in (server-side request forgery). So the URL is checked when it
is subscribed (a clear 422) and again at every attempt, on the addresses the name
resolves to then; the request goes to the address that was checked (the name is kept
for ``Host`` and TLS), so a DNS answer that changes between check and connect (DNS
rebinding) cannot move it. ``OUTLAST_WEBHOOK_ALLOW_PRIVATE`` lets loopback and private
ranges through, and plain ``http``, for tests and receivers on the operator's own network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from outlast.errors import OutlastError

MAX_URL = 2048
PRINTABLE = re.compile(r"^[!-~]+$")
# What the subscription's schema declares: a scheme, then a host of URL characters.
URL_PATTERN = r"^https?://[A-Za-z0-9\-._~%!$&'()*+,;=:@\[\]]+(?:[/?#][!-~]*)?$"


class UnsafeUrl(OutlastError):
    """A URL outlast will not send to; retrying the same URL cannot help."""

    status = 422
    title = "Webhook URL not allowed"


@dataclass(frozen=True, slots=True)
class Target:
    """The URL to connect to (its host an address that was checked), and the name the
    request carries for ``Host`` and TLS."""

    url: str
    host: str
    sni: str | None


def check_url(url: str, *, allow_private: bool) -> str:
    """``url`` if its form is one outlast sends to (the addresses are checked at send
    time, and here when the host is an address); else UnsafeUrl."""
    if len(url) > MAX_URL:
        raise UnsafeUrl(f"the URL is longer than {MAX_URL} characters")
    if not PRINTABLE.match(url):
        raise UnsafeUrl("the URL must be printable ASCII, without spaces (a name as punycode)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"not a URL: {exc}") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise UnsafeUrl(
            f"scheme {parts.scheme or '(none)'!r} not allowed: only "
            + " or ".join(schemes)
            + ("" if allow_private else " (http needs OUTLAST_WEBHOOK_ALLOW_PRIVATE)")
        )
    if not parts.hostname:
        raise UnsafeUrl("the URL has no host")
    if parts.username or parts.password:
        raise UnsafeUrl("credentials in the URL are not allowed: use the signing secret")
    del port
    literal = _address(parts.hostname)
    if literal is not None:
        _allowed(literal, allow_private)
    return url


async def resolve(url: str, *, allow_private: bool) -> Target:
    """Where to connect for ``url`` now: its host resolved, every address allowed."""
    check_url(url, allow_private=allow_private)
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    literal = _address(host)
    if literal is not None:
        addresses = [literal]
    else:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise UnresolvedHost(f"{host}: {exc.strerror}") from None
        addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    for address in addresses:
        _allowed(address, allow_private)  # all of them: the client may try any
    chosen = addresses[0]
    shown = f"[{chosen}]" if chosen.version == 6 else str(chosen)
    netloc = f"{shown}:{parts.port}" if parts.port else shown
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    host_header = parts.netloc.rsplit("@", 1)[-1]
    return Target(pinned, host_header, host if parts.scheme == "https" else None)


class UnresolvedHost(OutlastError):
    """The host did not resolve: it may later (retried like any failed attempt)."""

    retryable = True
    status = 502
    title = "Webhook host did not resolve"


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_private: bool) -> None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_multicast or address.is_unspecified:
        raise UnsafeUrl(f"{address} is not an address outlast sends to")
    if not address.is_global and not allow_private:
        raise UnsafeUrl(
            f"{address} is a loopback, private or reserved address: not allowed unless "
            "OUTLAST_WEBHOOK_ALLOW_PRIVATE is set"
        )
