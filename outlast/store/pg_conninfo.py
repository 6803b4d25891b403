"""How a connection to Postgres notices that its peer is gone when nothing says so.

A half-open connection (a NAT or firewall that forgot the flow, a host that vanished, a
cable pulled) drops packets without a reset. Left to the kernel's defaults, a statement
on it waits for TCP's retransmissions to give up (about 15 minutes on Linux), and a
connection that only waits to be sent something (a ``LISTEN``, an idle pooled one) never
finds out. Every connection outlast makes (the pool's, the listeners') therefore asks
libpq for a bound of ``timeout`` seconds:

- ``tcp_user_timeout``: data sent and not acknowledged for that long (a statement, or the
  SYN of a new connection) aborts the connection;
- TCP keepalives: a connection that has received nothing for half of it sends probes, and
  is aborted once ``timeout`` has passed since it last heard anything (Linux counts from
  the last packet received when a user timeout is set; elsewhere idle + interval × count
  is at most ``timeout`` too);
- ``connect_timeout``: an attempt to connect gives up after as long (psycopg's own default
  is 130 seconds).

Only what the URL (or libpq's environment: ``PGCONNECT_TIMEOUT``) does not set itself is
added: an operator who tuned these keeps them. A server-side statement timeout would not
do this job: the server knows nothing of the client's network, and a long query is not a
dead link.
"""

from __future__ import annotations

import math

from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

DEAD_PEER_TIMEOUT = 10.0  # seconds; Settings.pg_dead_peer_timeout


def dead_peer_options(timeout: float) -> dict[str, str]:
    """The libpq parameters that bound a dead peer's detection to ``timeout`` seconds
    (keepalive times are whole seconds, at least 1)."""
    idle = max(1, int(timeout / 2))
    interval = max(1, int((timeout - idle) / 3))
    count = max(1, int((timeout - idle) / interval))
    return {
        "keepalives": "1",
        "keepalives_idle": str(idle),
        "keepalives_interval": str(interval),
        "keepalives_count": str(count),
        "tcp_user_timeout": str(int(timeout * 1000)),
        "connect_timeout": str(max(2, math.ceil(timeout))),  # libpq's least is 2
    }


def bounded(url: str, timeout: float) -> str:
    """``url`` as a connection string with ``dead_peer_options`` added, but for those
    that ``url`` or libpq's environment already sets."""
    chosen = set(conninfo_to_dict(url))
    chosen.update(
        o.keyword.decode()
        for o in pq.Conninfo.get_defaults()
        if o.val is not None and o.val != o.compiled
    )
    extra = {k: v for k, v in dead_peer_options(timeout).items() if k not in chosen}
    return make_conninfo(url, **extra)
