"""The ``outlast demo`` command: run the scenario, print the table, maybe keep serving."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from pathlib import Path

from rich.console import Console

from outlast.demo.scenario import Demo


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo", help="a narrated run of the reference agent: disconnects, a crash, a question"
    )
    demo.add_argument("--port", type=int, default=8000, help="tries this one first")
    demo.add_argument(
        "--data-dir", type=Path, default=Path(".outlast"), help="the demo uses <data-dir>/demo/"
    )
    demo.add_argument(
        "--model-delay",
        type=float,
        default=0.05,
        help="seconds between the scripted model's streamed chunks",
    )
    demo.add_argument(
        "--serve",
        action="store_true",
        help="keep the server running afterwards, to look at the run (Ctrl-C stops it)",
    )
    demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=120)  # a log file: do not wrap at 80
    demo = Demo(
        console,
        folder=(args.data_dir / "demo").resolve(),
        port=args.port,
        model_delay=args.model_delay,
    )
    started = time.monotonic()
    # The demo's servers run in their own sessions (a terminal's Ctrl-C must not reach the
    # one armed to die); a SIGTERM to the demo (a supervisor, `kill`) would end it without
    # the `finally` below and leave its server holding the port, so it ends the same way.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        ok = asyncio.run(demo.run())
        demo.summary()
        console.print(f"took {time.monotonic() - started:.1f} s")
        if args.serve and demo.server is not None and demo.server.proc.poll() is None:
            console.print(f"\nserving on {demo.server.url} (Ctrl-C to stop)")
            with contextlib.suppress(KeyboardInterrupt):
                demo.server.proc.wait()
    finally:
        if demo.server is not None:
            demo.server.stop()
    return 0 if ok else 1


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
