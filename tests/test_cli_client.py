"""The terminal client as a person uses it: `outlast run | attach | answer | cancel | status |
runs` as subprocesses, against real `outlast serve` processes (killed and restarted under
it), and against a scripted server for the parts of waits the real one cannot do yet."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from outlast.store import Store
from outlast.vocabulary import TERMINAL
from tests.harness import PATIENCE, NotYet, eventually_blocking
from tests.procs import kill, start_server

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent
SLOW_STEPS = json.dumps({"configurable": {"step_delay": 0.4}})
_LINE = re.compile(r"^#(\d+) ")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OUTLAST_SERVER"}
    env["COLUMNS"] = "200"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cli:
    """The CLI running in the background; its output is read by threads as it comes, so a
    test can wait for a line with a deadline instead of blocking on a pipe."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "outlast.cli", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=_env(),
        )
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self._out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(pipe: Any, into: list[str]) -> None:
        for raw in iter(pipe.readline, b""):
            into.append(raw.decode(errors="replace"))

    @property
    def out(self) -> str:
        return "".join(self._out)

    @property
    def err(self) -> str:
        return "".join(self._err)

    def wait_for(self, text: str, timeout: float = PATIENCE) -> None:
        def printed() -> bool:
            if text in self.err or text in self.out:
                return True
            if self.proc.poll() is not None:
                for reader in self._readers:
                    reader.join(timeout=5)
                if text in self.err or text in self.out:
                    return True
                raise AssertionError(f"exited {self.proc.returncode} before {text!r}:\n{self}")
            raise NotYet(str(self))

        eventually_blocking(printed, timeout=timeout, what=f"{text!r} printed")

    def type(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float = 60) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"still running after {timeout} s:\n{self}") from None
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def seqs(self) -> list[int]:
        return [int(m.group(1)) for line in self._err if (m := _LINE.match(line))]

    def __str__(self) -> str:
        return f"--- stdout\n{self.out}--- stderr\n{self.err}"


@pytest.fixture
def cli() -> Iterator[Callable[..., Cli]]:
    started: list[Cli] = []

    def start(*args: str) -> Cli:
        started.append(Cli(*args))
        return started[-1]

    yield start
    for c in started:
        c.stop()


def outlast(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "outlast.cli", *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[str]:
    proc, url = start_server(db_url, tmp_path / "server.log")
    yield url
    kill(proc)


def serve_on(db_url: str, port: int, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """`outlast serve` on a port the test chose, so a restarted server is found again."""
    return start_server(db_url, log, port=port, **env)[0]


def snapshot(url: str, run_id: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/v1/runs/{run_id}", timeout=10)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def poll_status(url: str, run_id: str, statuses: set[str]) -> dict[str, Any]:
    def probe() -> dict[str, Any]:
        run = snapshot(url, run_id)
        if run["status"] in statuses:
            return run
        if run["status"] in TERMINAL:
            raise AssertionError(f"run ended {run['status']}, not {statuses}: {run}")
        raise NotYet(run)

    return eventually_blocking(probe, every=0.05, what=f"run {run_id} in {statuses}")


def run_id_of(c: Cli) -> str:
    match = re.search(r"^run ([0-9a-f-]{36})", c.err, re.MULTILINE)
    assert match, str(c)
    return match.group(1)


def assert_each_event_once(c: Cli) -> None:
    seqs = c.seqs()
    assert seqs and seqs == sorted(set(seqs)), f"repeated or out of order: {seqs}\n{c}"


# --- against a real server ---------------------------------------------------------------


def test_run_follows_to_completion_and_prints_the_result(
    server: str, cli: Callable[..., Cli]
) -> None:
    c = cli("run", "hello", "--graph", "steps", "--server", server)
    assert c.finish() == 0, str(c)
    assert c.out.strip() == "Worked on 'hello': plan → gather → draft → review → finish."
    key = re.search(r"idempotency key (\S+)", c.err)
    assert key, str(c)
    for step in ("plan", "gather", "draft", "review", "finish"):
        assert f"✓ {step}" in c.err
    assert "completed" in c.err
    assert_each_event_once(c)
    # The printed key reaches the same run instead of starting another.
    again = outlast("run", "hello", "--graph", "steps", "--key", key.group(1), "--server", server)
    assert again.returncode == 0, again.stderr
    assert "already accepted with this key" in again.stderr
    assert run_id_of(c) in again.stderr


def test_dropped_connection_reconnects_and_shows_each_event_once(
    db_url: str, tmp_path: Path, cli: Callable[..., Cli]
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    proc = serve_on(db_url, port, log)
    try:
        c = cli("run", "survive", "--config-json", SLOW_STEPS, "--server", url)
        c.wait_for("✓ plan")
        kill(proc, signal.SIGKILL)
        c.wait_for("connection lost")
        proc = serve_on(db_url, port, log)
        assert c.finish() == 0, str(c)
    finally:
        kill(proc)
    assert "reconnected, resumed after seq" in c.err
    assert "Worked on 'survive'" in c.out
    assert_each_event_once(c)


def test_transport_clock_closes_are_invisible_but_for_a_notice(
    db_url: str, tmp_path: Path, cli: Callable[..., Cli]
) -> None:
    proc, url = start_server(db_url, tmp_path / "server.log", OUTLAST_STREAM_MAX_SECONDS="0.5")
    try:
        c = cli("run", "tick", "--config-json", SLOW_STEPS, "--server", url)
        assert c.finish() == 0, str(c)
    finally:
        kill(proc)
    assert "the server closed the stream" in c.err and "reconnected" in c.err
    assert_each_event_once(c)
    assert c.seqs() == list(range(1, max(c.seqs()) + 1))


def test_server_down_at_first_then_up(db_url: str, tmp_path: Path, cli: Callable[..., Cli]) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    c = cli("run", "patience", "--server", url)
    c.wait_for(f"server unreachable at {url}, retrying in")
    proc = serve_on(db_url, port, tmp_path / "server.log")
    try:
        assert c.finish() == 0, str(c)
    finally:
        kill(proc)
    assert "Worked on 'patience'" in c.out


def test_ctrl_c_detaches_and_the_run_goes_on(server: str, cli: Callable[..., Cli]) -> None:
    c = cli("run", "keep going", "--config-json", SLOW_STEPS, "--server", server)
    c.wait_for("✓ plan")
    c.proc.send_signal(signal.SIGINT)
    assert c.finish() == 130, str(c)
    run_id = run_id_of(c)
    assert (
        f"detached; the run goes on. Reattach with: outlast attach {run_id} --server {server}"
        in c.err
    )
    assert poll_status(server, run_id, {"completed"})["status"] == "completed"
    again = outlast("attach", run_id, "--server", server)
    assert again.returncode == 0, again.stderr
    assert "Worked on 'keep going'" in again.stdout


def test_status_and_runs(server: str) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    created = outlast("run", "listed", "--thread", thread, "--detach", "--server", server)
    assert created.returncode == 0, created.stderr
    run_id = created.stdout.strip()
    uuid.UUID(run_id)
    assert outlast("attach", run_id, "--server", server).returncode == 0

    status = outlast("status", run_id, "--server", server)
    assert status.returncode == 0, status.stderr
    assert re.search(r"^status\s+completed$", status.stdout, re.MULTILINE), status.stdout
    assert f"thread   {thread}" in status.stdout
    assert "Worked on 'listed'" in status.stdout

    listed = outlast("runs", "--thread", thread, "--limit", "5", "--server", server)
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout and "completed" in listed.stdout
    none = outlast("runs", "--thread", thread, "--status", "failed", "--server", server)
    assert none.returncode == 0 and run_id not in none.stdout

    missing = outlast("status", str(uuid.uuid4()), "--server", server)
    assert missing.returncode == 4 and "no run" in missing.stderr


def test_cancel_then_attach_reports_cancelled(server: str) -> None:
    created = outlast("run", "x", "--graph", "slow", "--detach", "--server", server)
    run_id = created.stdout.strip()
    cancelled = outlast("cancel", run_id, "--reason", "enough", "--server", server)
    assert cancelled.returncode == 0, cancelled.stderr
    assert re.search(r": (cancelling|cancelled)$", cancelled.stdout.strip()), cancelled.stdout
    attached = outlast("attach", run_id, "--server", server)
    assert attached.returncode == 2, attached.stderr
    assert "cancelled: enough" in attached.stderr


def test_answer_a_run_that_is_not_waiting_is_refused(server: str) -> None:
    created = outlast("run", "x", "--detach", "--server", server)
    run_id = created.stdout.strip()
    poll_status(server, run_id, {"completed"})
    answered = outlast("answer", run_id, "Ada", "--server", server)
    assert answered.returncode == 4
    assert "not waiting" in answered.stderr


def test_one_shot_command_gives_up_when_unreachable() -> None:
    # A port bound but never listening: connections are refused, and no server of a test
    # running in parallel can take it meanwhile (a merely free port once could)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{held.getsockname()[1]}"
        # the subprocess's own timeout bounds a client that would retry forever; the
        # client's deadline leaves room for a first refused attempt on a busy machine
        # (with 1 s, a starved process once used it all up before its first retry)
        result = outlast("status", str(uuid.uuid4()), "--server", url, "--timeout", "5", timeout=60)
    assert result.returncode == 3, result.stderr
    assert f"server unreachable at {url}, retrying in" in result.stderr
    assert "gave up after 5 s" in result.stderr


async def test_pruned_events_show_a_gap(server: str, store: Store) -> None:
    created = outlast("run", "old", "--detach", "--server", server)
    run_id = created.stdout.strip()
    poll_status(server, run_id, {"completed"})
    await store.prune_events(run_id, 6)
    attached = outlast("attach", run_id, "--server", server)
    assert attached.returncode == 0, attached.stderr
    assert "⚠ gap: events 1–6 were pruned" in attached.stderr
    assert "snapshot: status completed" in attached.stderr
    seqs = [int(m.group(1)) for ln in attached.stderr.splitlines() if (m := _LINE.match(ln))]
    assert seqs == list(range(7, 14))
    # Nothing left, not even the terminal event: the snapshot tells how the run ended.
    await store.prune_events(run_id, 13)
    bare = outlast("attach", run_id, "--server", server, timeout=30)
    assert bare.returncode == 0, bare.stderr
    assert "⚠ gap: events 1–13 were pruned" in bare.stderr
    assert "Worked on 'old'" in bare.stdout


def test_human_wait_is_answered_at_the_prompt(server: str, cli: Callable[..., Cli]) -> None:
    c = cli("run", "hi", "--graph", "asks", "--server", server)
    c.wait_for("What is your name?")
    c.type("Ada")
    assert c.finish() == 0, str(c)
    assert "hello Ada" in c.out


def test_answer_command_resumes_a_waiting_run(server: str) -> None:
    run_id = outlast("run", "hi", "--graph", "asks", "--detach", "--server", server).stdout.strip()
    poll_status(server, run_id, {"waiting"})
    answered = outlast("answer", run_id, "Ada", "--server", server)
    assert answered.returncode == 0, answered.stderr
    again = outlast("answer", run_id, "Bob", "--server", server)
    assert again.returncode == 4
    attached = outlast("attach", run_id, "--server", server)
    assert attached.returncode == 0 and "hello Ada" in attached.stdout


# --- against a scripted server: the wait contract, before the real server has waits ------

RUN = "00000000-0000-4000-8000-000000000001"
NAME_SCHEMA = {"type": "object", "required": ["name"]}


class Scripted:
    """Plays one run that waits for a human, as the contract describes: the wait ends when
    the CLI's answer is accepted, or (``remote``) when the test answers "from elsewhere"."""

    def __init__(self, mode: str = "validate", schema: Any = NAME_SCHEMA) -> None:
        self.mode = mode
        self.answered = threading.Event()
        if mode == "history":
            self.answered.set()
        self.answers: list[Any] = []
        self.wait = {
            "id": "w1",
            "kind": "human",
            "object": "name",
            "since": "2026-01-01T00:00:00+00:00",
            "last_signal_at": None,
            "lease_expires_at": None,
            "renewals": 0,
            "prompt": "What is your name?",
            "schema": schema,
        }
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.answered.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def snapshot(self) -> dict[str, Any]:
        done = self.answered.is_set()
        return {
            **{"id": RUN, "thread_id": "t", "graph": "asks", "attempts": 1, "max_attempts": 3},
            "status": "completed" if done else "waiting",
            "wait": None if done else self.wait,
            "last_seq": 5 if done else 3,
        }

    def events(self, after: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
        yield 1, "run.created", {"status": "queued"}
        yield 2, "run.started", {"status": "running", "attempt": 1}
        yield 3, "wait.started", {"wait": self.wait}
        deadline = time.monotonic() + 30
        while not self.answered.wait(0.3) and time.monotonic() < deadline:
            yield 0, "", {}  # keepalive
        value = self.answers[-1] if self.answers else {"name": "Ada"}
        yield 4, "wait.ended", {"wait_id": "w1", "kind": "human", "how": "answered"}
        name = value.get("name") if isinstance(value, dict) else value
        result = {"greeting": f"hello {name}"}
        yield 5, "run.completed", {"status": "completed", "result": result}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any, kind: str = "application/json") -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _problem(self, status: int, detail: str) -> None:
                body = {"title": "Problem", "status": status, "detail": detail}
                self._json(status, body, "application/problem+json")

            def do_GET(self) -> None:
                if self.path == f"/v1/runs/{RUN}":
                    self._json(200, scripted.snapshot())
                elif self.path == f"/v1/runs/{RUN}/events":
                    self._stream(int(self.headers.get("Last-Event-ID") or 0))
                else:
                    self._problem(404, "no such resource")

            def _stream(self, after: int) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for seq, kind, data in scripted.events(after):
                    if seq == 0:
                        self.wfile.write(b": ping\n\n")
                    elif seq > after:
                        envelope = {"seq": seq, "type": kind, "time": "", "run_id": RUN}
                        payload = json.dumps({**envelope, "data": data})
                        self.wfile.write(f"id: {seq}\nevent: {kind}\ndata: {payload}\n\n".encode())
                    self.wfile.flush()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path != f"/v1/runs/{RUN}/input" or body.get("wait_id") != "w1":
                    self._problem(404, "no such wait")
                elif scripted.mode == "conflict" or scripted.answered.is_set():
                    scripted.answered.set()  # someone else was first
                    self._problem(409, "wait w1 was already answered")
                elif scripted.wait["schema"] == NAME_SCHEMA and not isinstance(
                    body.get("value"), dict
                ):
                    self._problem(422, "value must be an object with a name")
                else:
                    scripted.answers.append(body["value"])
                    scripted.answered.set()
                    self._json(202, scripted.snapshot())

        return Handler


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    made: list[Scripted] = []

    def make(*args: Any, **kwargs: Any) -> Scripted:
        made.append(Scripted(*args, **kwargs))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_prompt_asks_again_until_the_answer_fits_the_schema(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted()
    c = cli("attach", RUN, "--server", srv.url)
    c.wait_for("? What is your name?")
    c.type("Ada")
    c.wait_for("that is not valid JSON")
    c.type('"Ada"')
    c.wait_for("not accepted: value must be an object with a name")
    c.type('{"name": "Ada"}')
    assert c.finish() == 0, str(c)
    assert srv.answers == [{"name": "Ada"}]
    assert c.err.count("? What is your name?") == 3
    assert "answer sent" in c.err
    assert json.loads(c.out) == {"greeting": "hello Ada"}


def test_text_answer_when_the_schema_is_a_string(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted(schema={"type": "string"})
    c = cli("attach", RUN, "--server", srv.url)
    c.wait_for("? What is your name?")
    c.type("Ada Lovelace")
    assert c.finish() == 0, str(c)
    assert srv.answers == ["Ada Lovelace"]


def test_an_answer_from_elsewhere_withdraws_the_prompt(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted(schema=None)
    c = cli("attach", RUN, "--server", srv.url)
    c.wait_for("? What is your name?")
    srv.answered.set()  # stdin stays open and silent: the CLI must not hang on it
    assert c.finish() == 0, str(c)
    assert "▶ wait ended (answered)" in c.err
    assert srv.answers == []


def test_a_second_answer_is_told_it_was_already_answered(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted("conflict", schema=None)
    c = cli("attach", RUN, "--server", srv.url)
    c.wait_for("? What is your name?")
    c.type("Ada")
    assert c.finish() == 0, str(c)
    assert "already answered elsewhere" in c.err


def test_no_input_follower_and_the_answer_command(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted()
    c = cli("attach", RUN, "--no-input", "--server", srv.url)
    c.wait_for(f"answer with: outlast answer {RUN} VALUE")
    assert "? What is your name?" not in c.err
    refused = outlast("answer", RUN, "Ada", "--server", srv.url)
    assert refused.returncode == 4 and "wants JSON" in refused.stderr
    answered = outlast("answer", RUN, '{"name": "Grace"}', "--server", srv.url)
    assert answered.returncode == 0, answered.stderr
    assert c.finish() == 0, str(c)
    assert "hello Grace" in c.out


def test_a_wait_answered_before_attaching_is_not_asked_again(
    scripted: Callable[..., Scripted], cli: Callable[..., Cli]
) -> None:
    srv = scripted("history")
    c = cli("attach", RUN, "--server", srv.url)
    assert c.finish() == 0, str(c)
    assert "⏸ waiting (human)" in c.err and "? What is your name?" not in c.err


def test_runtime_events_read_as_sentences() -> None:
    from outlast.client.render import event_line
    from outlast.client.sse import Event

    activity = event_line(
        Event("activity", 1, {"kind": "node", "name": "fetch", "health": "silent", "renewals": 2})
    )
    assert activity == "activity: fetch (node, silent, 2 renewal(s))"
    verdict = event_line(
        Event("supervisor.verdict", 2, {"tier": 4, "verdict": "escalate", "reason": "silent"})
    )
    assert verdict == "supervisor (tier 4): escalate — silent"
    budget = event_line(
        Event(
            "budget.checkpoint",
            3,
            {"level": "hard", "dimension": "steps", "used": 5.0, "limit": 5.0},
        )
    )
    assert budget == "budget: hard limit of steps reached (5.0 of 5.0)"
