"""``--workers N``: one command as N processes, to use the machine's cores.

Why processes: one Python process runs its event loop on one core, whatever the machine
has. An outlast process is self-contained (its own event loop, database pool, worker and
limits), and processes coordinate only through the database (``SKIP LOCKED`` claims,
fenced leases, ``LISTEN``), so N of them on one machine are N of them on N machines.

``serve``: the parent binds the listening socket once and each child serves it (handed
to uvicorn as a socket), so the kernel spreads connections over the children. ``worker``: N workers.

The parent supervises and does nothing else: a signal (Ctrl-C, SIGTERM) goes to every
child, which drains as one process would; a child that exits on its own (a worker loop that
kept failing, a crash) stops the others and the parent exits with its code, so a process
supervisor (systemd, Kubernetes) restarts the whole set. A child dies with its parent
(``PR_SET_PDEATHSIG`` on Linux, else it watches its parent's pid), so a SIGKILL of the
parent is a SIGKILL of the set, as it is of one process.

Only with Postgres: the embedded SQLite store notifies within its own process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from types import FrameType

# How a child learns the socket its parent bound, and that it has a parent to die with.
FD_ENV = "_OUTLAST_LISTEN_FD"
PARENT_ENV = "_OUTLAST_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def default_workers(postgres: bool) -> int:
    """As many processes as cores with Postgres; one with the embedded store."""
    return (os.cpu_count() or 1) if postgres else 1


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def listen(host: str, port: int, *, or_any: bool = False) -> socket.socket:
    """A listening socket on ``port`` (or, with ``or_any``, on a free one when ``port`` is
    taken), to hand to an ``outlast serve`` child with :func:`handed_over`."""
    try:
        return bind(host, port)
    except OSError:
        if not or_any or port == 0:
            raise
        return bind(host, 0)


def handed_over(sock: socket.socket, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child that serves ``sock`` (pass ``pass_fds=(sock.fileno(),)``).

    A port chosen free and bound later by the child is a race: on a busy machine another
    process can take it in between, and a readiness probe then reaches *that* process. A
    socket bound before the child starts is the child's from the first instant."""
    return {**env, FD_ENV: str(sock.fileno())}


def is_child() -> bool:
    """Whether this process is one of the N of ``--workers N`` (its parent spoke for the
    set). Asked of the environment, never of the socket: ``inherited_socket`` wraps the
    descriptor, and a wrapper dropped unused closes it under the process."""
    return bool(os.environ.get(PARENT_ENV))


def inherited_socket() -> socket.socket | None:
    """In a child: the listening socket its parent bound, as the TCP socket it is.

    Not uvicorn's ``fd``: uvicorn wraps a descriptor as an ``AF_UNIX`` socket, and asyncio
    sets ``TCP_NODELAY`` only on the connections of a socket it knows to be TCP, so every
    response would wait on Nagle's algorithm and the client's delayed ACK (about 40 ms a
    request). ``socket(fileno=)`` asks the kernel what the descriptor is."""
    raw = os.environ.get(FD_ENV)
    return socket.socket(fileno=int(raw)) if raw else None


def die_with_parent() -> None:
    """In a child: end when the parent ends, however it ends."""
    parent = os.environ.get(PARENT_ENV)
    if not parent:
        return
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != int(parent):  # it died before prctl took effect
                    os.kill(os.getpid(), signal.SIGKILL)
                return

    def watch() -> None:
        while os.getppid() == int(parent):
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="outlast-parent-watch", daemon=True).start()


def supervise(argv: list[str], count: int, sock: socket.socket | None = None) -> int:
    """Run ``outlast <argv> --workers 1`` ``count`` times and wait for them; returns the
    exit code for the parent (0 after a requested stop, else the first failing child's)."""
    env = {**os.environ, PARENT_ENV: str(os.getpid())}
    pass_fds: tuple[int, ...] = ()
    if sock is not None:
        env = handed_over(sock, env)
        pass_fds = (sock.fileno(),)
    command = [sys.executable, "-m", "outlast.cli", *argv, "--workers", "1"]
    children = [subprocess.Popen(command, env=env, pass_fds=pass_fds) for _ in range(count)]
    requested: list[int] = []
    first_end: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        requested.append(signum)
        stop(signum)

    def stop(signum: int) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    try:
        while not requested and not first_end:
            first_end.extend(c.returncode for c in children if c.poll() is not None)
            time.sleep(0.2)
        if first_end and not requested:
            stop(signal.SIGTERM)  # one child ended on its own: the set stops with it
        codes = [child.wait() for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    if first_end:
        # a child should never end by itself: even a clean exit is a failure of the set
        return first_end[0] or 1
    stopped_by = {0, -signal.SIGTERM, -signal.SIGINT}
    return next((code for code in codes if code not in stopped_by), 0)
