"""Where a webhook may be sent: by default only ``https`` to public addresses.

A subscriber chooses the URL and outlast makes the request, from inside the operator's
network: without a check, a subscription to ``http://169.254.169.254/`` or to a database
port on the LAN is a way in (server-side request forgery). So the URL is checked when it
is subscribed (a clear 422) and again at every attempt, on the addresses the name
resolves to then; the request goes to the address that was checked (the name is kept
for ``Host`` and TLS), so a DNS answer that changes between check and connect (DNS
rebinding) cannot move it. ``OUTLAST_WEBHOOK_ALLOW_PRIVATE`` lets loopback and private
ranges through, and plain ``http``, for tests and receivers on the operator's own network.

A URL that names outlast's own machine is refused when it is subscribed, not left for
the send to find (GHSA-2c9q-c2q9-qgqv: LangGraph's server posted relative and loopback
webhooks to itself): a relative URL (no scheme), a name that is always this machine
(``localhost``, ``*.localhost``), and an address in any form a resolver reads as one:
``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are 127.0.0.1 to ``getaddrinfo`` as to
a browser (the WHATWG URL standard's IPv4 parser, here), and an IPv6 address that
carries an IPv4 one (mapped, compatible, NAT64, 6to4) is checked as that one too.
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


# Names of this machine whatever DNS says: RFC 6761 keeps ``localhost`` and its
# subdomains for loopback; then what /etc/hosts names it, and Docker's name, inside a
# container, for the machine the container runs on.
_LOCAL_NAMES = frozenset(
    {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", "host.docker.internal"}
)
_DECIMAL = re.compile(r"^[0-9]+$")
_HEX = re.compile(r"^0[xX][0-9A-Fa-f]*$")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


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
    time, and here when the host is an address or a name of this machine); else
    UnsafeUrl."""
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
    if not parts.scheme and not parts.netloc:
        # LangGraph's server posted such a URL to its own routes, past their auth
        raise UnsafeUrl(f"{url!r} is a relative URL: a webhook is an absolute {schemes[0]} URL")
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
        _allowed(literal, allow_private, parts.hostname)
    elif _local_name(parts.hostname) and not allow_private:
        raise UnsafeUrl(
            f"{parts.hostname} names this machine (loopback) or its host: not allowed unless "
            "OUTLAST_WEBHOOK_ALLOW_PRIVATE is set"
        )
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
        return _ipv4_shorthand(host)


def _ipv4_shorthand(host: str) -> ipaddress.IPv4Address | None:
    """The address a host that ends in a number stands for, as the WHATWG URL standard
    (and ``inet_aton``, which ``getaddrinfo`` tries first) reads it: one to four parts,
    each decimal, ``0x`` hex or ``0`` octal, the last filling the bytes left. None for a
    name; such a host that is no address is not a URL."""
    labels = host.split(".")
    if len(labels) > 1 and labels[-1] == "":
        labels.pop()  # the root's dot
    if not (_DECIMAL.match(labels[-1]) or _HEX.match(labels[-1])):
        return None
    numbers = [_ipv4_number(label) for label in labels]
    if len(labels) > 4 or None in numbers:
        raise UnsafeUrl(f"not a URL: host {host!r} ends in a number but is no IPv4 address")
    *first, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in first) or last >= 256 ** (4 - len(first)):
        raise UnsafeUrl(f"not a URL: host {host!r} is an IPv4 address out of range")
    value = last
    for i, n in enumerate(first):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _ipv4_number(label: str) -> int | None:
    if _HEX.match(label):
        return int(label[2:] or "0", 16)
    if not _DECIMAL.match(label):
        return None
    if len(label) > 1 and label.startswith("0"):
        return int(label, 8) if set(label) <= set("01234567") else None
    return int(label)


def _local_name(host: str) -> bool:
    name = host.rstrip(".").lower()
    return name in _LOCAL_NAMES or name.endswith(".localhost")


def _allowed(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
    allow_private: bool,
    host: str | None = None,
) -> None:
    """Refuse ``address`` (written ``host`` in the URL) unless outlast sends to it."""
    written = host.strip("[]") if host else str(address)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for each in (address, *_carried(address)):
        shown = written if written == str(each) else f"{written} (that is {each})"
        if each.is_multicast or each.is_unspecified:
            raise UnsafeUrl(f"{shown} is not an address outlast sends to")
        if not each.is_global and not allow_private:
            raise UnsafeUrl(
                f"{shown} is a loopback, private or reserved address: not allowed unless "
                "OUTLAST_WEBHOOK_ALLOW_PRIVATE is set"
            )


def _carried(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> list[ipaddress.IPv4Address]:
    """The IPv4 address an IPv6 one carries, which a host or network that translates it
    reaches: Python counts ``::127.0.0.1`` and ``64:ff9b::127.0.0.1`` as global."""
    if isinstance(address, ipaddress.IPv4Address):
        return []
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address in _NAT64 or (address in _COMPATIBLE and int(address) > 1):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []
