"""`outlast serve` keeps an idle connection open longer than clients keep theirs, so the
client closes first and never sends a request on a connection the server is closing
(httpx's pool and uvicorn's default both expire an idle connection after 5 s: with 200
clients some requests died with ReadError in bench/peers.py)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.procs import kill, start_server

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def _exchange(sock: socket.socket) -> bytes:
    sock.sendall(REQUEST)
    return sock.recv(65536)


async def test_an_idle_connection_outlives_a_clients_keep_alive(tmp_path: Path) -> None:
    proc, url = start_server(f"sqlite:///{tmp_path / 'o.db'}", tmp_path / "server.log")
    try:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            assert _exchange(sock).startswith(b"HTTP/1.1 200")
            await asyncio.sleep(6.5)  # idle past uvicorn's default of 5 s (what is tested)
            again = _exchange(sock)  # b"" when the server closed it meanwhile
            assert again.startswith(b"HTTP/1.1 200"), again
    finally:
        kill(proc)
