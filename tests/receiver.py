"""A real HTTP receiver of webhooks, in a thread of the test process: it records every
request (headers and body) and answers from a script the test sets (``500`` twice then
``200``, a hang past the sender's timeout, a redirect, a huge body)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook as Verifier

from tests.harness import PATIENCE


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def id(self) -> str:
        return self.headers["webhook-id"]

    def json(self) -> Any:
        return json.loads(self.body)

    def verified(self, secret: str) -> Any:
        """The payload, once ``standardwebhooks`` accepts its signature (else it raises)."""
        return Verifier(secret).verify(self.body, self.headers)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0  # seconds before answering (a hang past the sender's timeout)
    headers: tuple[tuple[str, str], ...] = ()


class Receiver:
    def __init__(self) -> None:
        self.got: list[Received] = []
        self.cut: list[str] = []  # answers the sender stopped reading (the socket closed)
        self.script: list[Answer] = []  # answers in order; then `otherwise`
        self.otherwise = Answer()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(size)
                headers = {k.lower(): v for k, v in self.headers.items()}
                answer = owner._record(Received(self.path, headers, body))
                if answer.delay:
                    time.sleep(answer.delay)
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers:
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                    self.wfile.flush()
                except OSError as exc:  # the sender gave up, or stopped reading
                    owner.cut.append(type(exc).__name__)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _record(self, received: Received) -> Answer:
        with self._changed:
            self.got.append(received)
            self._changed.notify_all()
            return self.script.pop(0) if self.script else self.otherwise

    def wait_for(self, done: Callable[[list[Received]], bool], what: str) -> list[Received]:
        """Until ``done(requests so far)``; fails after PATIENCE seconds."""
        deadline = time.monotonic() + PATIENCE
        with self._changed:
            while not done(self.got):
                left = deadline - time.monotonic()
                assert left > 0, f"the receiver never saw {what}: got {len(self.got)}"
                self._changed.wait(left)
            return list(self.got)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()
