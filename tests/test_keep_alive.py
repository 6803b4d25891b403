"""`outlast serve` keeps an idle connection open longer than clients keep theirs, so the
client closes first and never sends a request on a connection the server is closing
(httpx's pool and uvicorn's default both expire an idle connection after 5 s: with 200
clients some requests died with ReadError in bench/peers.py)."""

from __future__ import annotations

import http.client
import time
from pathlib import Path

from tests.procs import kill, start_server


def test_an_idle_connection_outlives_a_clients_keep_alive(tmp_path: Path) -> None:
    proc, url = start_server(f"sqlite:///{tmp_path / 'o.db'}", tmp_path / "server.log")
    try:
        host, port = url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/healthz")
        first = conn.getresponse()
        assert first.status == 200
        first.read()
        sock = conn.sock
        time.sleep(6.5)  # idle past uvicorn's default of 5 s: the idleness under test
        # On a connection the server closed meanwhile this raises RemoteDisconnected.
        conn.request("GET", "/healthz")
        again = conn.getresponse()
        assert again.status == 200
        assert conn.sock is sock  # the same connection, not a new one
        conn.close()
    finally:
        kill(proc)
