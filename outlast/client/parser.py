"""The client's command line: ``outlast run | attach | answer | cancel | status | runs``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from outlast.client.api import default_server
from outlast.client.commands import (
    State,
    cmd_answer,
    cmd_attach,
    cmd_cancel,
    cmd_run,
    cmd_runs,
    cmd_status,
)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _server(parser: argparse.ArgumentParser, *, timeout: bool) -> None:
    parser.add_argument(
        "--server", default=default_server(), help="$OUTLAST_SERVER or http://127.0.0.1:8000"
    )
    if timeout:
        parser.add_argument(
            "--timeout", type=float, default=30.0, help="seconds to keep retrying (default 30)"
        )


def add_commands(sub: Any) -> None:
    """Register the client's subcommands on the ``outlast`` parser."""
    run = sub.add_parser("run", help="start a run and follow it to its end")
    run.add_argument("task", help="the user message")
    run.add_argument("--graph", help="graph name (default: the server's first)")
    run.add_argument("--thread", help="thread id to continue")
    run.add_argument("--key", help="idempotency key (default: a new one, printed)")
    run.add_argument("--detach", action="store_true", help="print the run id and exit")
    run.add_argument("--no-input", action="store_true", help="never prompt for waits")
    run.add_argument("--config-json", type=_json_object, help=argparse.SUPPRESS)
    _server(run, timeout=False)
    run.set_defaults(func=cmd_run)

    attach = sub.add_parser("attach", help="follow a run's events until it ends")
    attach.add_argument("run")
    attach.add_argument("--no-input", action="store_true", help="never prompt for waits")
    _server(attach, timeout=False)
    attach.set_defaults(func=cmd_attach)

    answer = sub.add_parser(
        "answer", help="answer a run's open wait (human, auth, budget or reconciliation)"
    )
    answer.add_argument("run")
    answer.add_argument("value", help="text, or JSON when the wait's schema asks for it")
    answer.add_argument("--wait-id", help="default: the run's current wait")
    answer.add_argument("--json", action="store_true", help="parse VALUE as JSON")
    _server(answer, timeout=True)
    answer.set_defaults(func=cmd_answer)

    cancel = sub.add_parser("cancel", help="cancel a run (cooperative, idempotent)")
    cancel.add_argument("run")
    cancel.add_argument("--reason")
    _server(cancel, timeout=True)
    cancel.set_defaults(func=cmd_cancel)

    status = sub.add_parser("status", help="a run's snapshot")
    status.add_argument("run")
    status.add_argument("--json", action="store_true", help="the raw snapshot")
    _server(status, timeout=True)
    status.set_defaults(func=cmd_status)

    runs = sub.add_parser("runs", help="list runs, newest first")
    runs.add_argument("--status")
    runs.add_argument("--thread")
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--cursor", help=argparse.SUPPRESS)
    _server(runs, timeout=True)
    runs.set_defaults(func=cmd_runs)

    for parser in (run, attach, answer, cancel, status, runs):
        parser.set_defaults(state=State(), client=True)
