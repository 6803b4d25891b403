"""``outlast serve | worker | migrate | run | attach | answer | cancel | status | runs``.

Every server flag has an ``OUTLAST_*`` environment twin (see ``outlast.config.Settings``);
flags win. With no database URL everything lives in SQLite under ``./.outlast/``. The
client commands (``outlast.client``) only talk HTTP to a server (``--server`` or
``$OUTLAST_SERVER``).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from outlast import __version__, heap, logs, processes, taskdump
from outlast.cli.serve import cmd_serve, process_count
from outlast.cli.support import checked_config, common_flags, console, describe, settings_from
from outlast.config import Settings


async def _worker_main(settings: Settings) -> None:
    from outlast.api.lg.cron_runs import firer
    from outlast.api.webhooks import BODIES
    from outlast.graph.registry import GraphRegistry
    from outlast.runtime.deployment import open_store
    from outlast.runtime.worker import Worker

    store = open_store(settings)
    await store.open()
    try:
        graphs = GraphRegistry.from_config(settings.graphs_file, settings.graphs)
        graphs.load_all()
        fire = firer(store, graphs, settings)
        worker = Worker(store, graphs, settings, bodies=BODIES, fire_cron=fire)
        heap.settle()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, worker.stop)
        taskdump.install(loop)
        console.print(
            f"[bold]outlast worker[/] {worker.id} on {describe(settings)}; "
            f"graphs: {', '.join(graphs.names)}"
        )
        await worker.run()
        console.print(f"worker {worker.id} stopped after {worker.completed} run(s)")
    finally:
        await store.close()


def cmd_worker(args: argparse.Namespace) -> int:
    settings = settings_from(args, "worker_concurrency", "workers")
    if checked_config(settings) is None:
        return 2
    count = process_count(settings)
    if count is None:
        return 2
    if count > 1:
        return processes.supervise(sys.argv[1:], count)
    processes.die_with_parent()
    if not settings.database_url:
        console.print(
            "[yellow]note:[/] a separate worker on SQLite is only woken by polling; "
            "use Postgres (--database-url) to run workers apart from the server"
        )
    asyncio.run(_worker_main(settings))
    return 0


async def _migrate(settings: Settings) -> list[str]:
    from outlast.runtime.deployment import open_store

    store = open_store(settings)
    await store.open()
    try:
        return await store.migrate()
    finally:
        await store.close()


def cmd_migrate(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if checked_config(settings) is None:  # its store options shape the store
        return 2
    applied = asyncio.run(_migrate(settings))
    console.print(
        f"{describe(settings)}: " + (f"applied {', '.join(applied)}" if applied else "up to date")
    )
    return 0


async def _secrets(settings: Settings, rotate: bool) -> tuple[int, int, int, int]:
    """(sealed, opened by an older key, unreadable, re-sealed)."""
    from outlast.runtime.deployment import open_store
    from outlast.secretbox import SecretBox

    box = SecretBox.from_settings(settings)
    store = open_store(settings)
    await store.open()
    try:
        items = await store.sealed_secrets()
        older = unreadable = resealed = 0
        for item in items:
            position = box.which_key(item.sealed)
            if position is None:
                unreadable += 1
                console.print(f"[red]unreadable[/]: {item.table} {item.id} ({item.field})")
            elif position > 0:
                older += 1
                if rotate and await store.reseal(item, box.rotate(item.sealed)):
                    resealed += 1
        return len(items), older, unreadable, resealed
    finally:
        await store.close()


def cmd_secrets(args: argparse.Namespace) -> int:
    """``check``: every stored secret opens with OUTLAST_SECRET_KEYS; ``rotate``: the
    ones only an older key opens are encrypted again with the first, after which the
    older key can be dropped. Unreadable ones are left as they are and named."""
    settings = settings_from(args)
    if checked_config(settings) is None:
        return 2
    rotate = args.secrets_command == "rotate"
    total, older, unreadable, resealed = asyncio.run(_secrets(settings, rotate))
    said = f"{total} sealed secret(s): {total - older - unreadable} with the first key"
    said += f", {older} with an older key" + (f" ({resealed} re-sealed)" if rotate else "")
    console.print(f"{describe(settings)}: {said}, {unreadable} unreadable")
    if unreadable:
        console.print(
            "[red]some secrets open with none of the configured keys[/]: put the key that "
            "sealed them back in OUTLAST_SECRET_KEYS (after the new one); nothing was changed"
        )
    return 1 if unreadable else 0


def cmd_key_new(args: argparse.Namespace) -> int:
    """Print a new key once; only its digest is written to the keys file."""
    import json
    import secrets

    from outlast.api.auth import digest

    key = f"olk_{secrets.token_urlsafe(32)}"
    entry = {"principal": args.principal, "sha256": digest(key)}
    if args.file is not None:
        data = json.loads(args.file.read_text()) if args.file.exists() else {"keys": []}
        data["keys"].append(entry)
        args.file.write_text(json.dumps(data, indent=2) + "\n")
        console.print(f"added {args.principal} to {args.file} (OUTLAST_API_KEYS_FILE)")
    else:
        console.print(json.dumps(entry))
    print(key)  # stdout: the only place the key ever appears
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="outlast", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"outlast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_server_commands(sub)
    _add_key_commands(sub)

    from outlast.client.parser import add_commands
    from outlast.demo.command import add_command as add_demo

    add_commands(sub)
    add_demo(sub)
    return parser


def _add_server_commands(sub: Any) -> None:
    """serve, worker, migrate: the processes of a deployment."""
    serve = sub.add_parser("serve", help="the HTTP API, with a worker in the same process")
    common_flags(serve)
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--concurrency", dest="worker_concurrency", type=int)
    serve.add_argument(
        "--workers", type=int, help="processes (default: the cores with Postgres, else 1)"
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        default=None,
        help="listen beyond loopback without API keys (a trusted network only)",
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="API only; run `outlast worker` processes separately (Postgres)",
    )
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="a worker alone, for another process or machine")
    common_flags(worker)
    worker.add_argument("--concurrency", dest="worker_concurrency", type=int)
    worker.add_argument(
        "--workers", type=int, help="processes (default: the cores with Postgres, else 1)"
    )
    worker.set_defaults(func=cmd_worker)

    migrate = sub.add_parser("migrate", help="create or upgrade the database schema")
    common_flags(migrate)
    migrate.set_defaults(func=cmd_migrate)


def _add_key_commands(sub: Any) -> None:
    """secrets check / rotate, key new: the keys that seal secrets and let callers in."""
    secrets = sub.add_parser("secrets", help="stored secrets: check the keys open them, rotate")
    secrets_sub = secrets.add_subparsers(dest="secrets_command", required=True)
    for name, what in (
        ("check", "every stored secret opens with OUTLAST_SECRET_KEYS"),
        ("rotate", "re-seal with the first key what only an older key opens"),
    ):
        command = secrets_sub.add_parser(name, help=what)
        common_flags(command)
        command.set_defaults(func=cmd_secrets)

    key = sub.add_parser("key", help="API keys: make one for a principal")
    key_sub = key.add_subparsers(dest="key_command", required=True)
    new_key = key_sub.add_parser("new", help="a new key; its digest goes into the keys file")
    new_key.add_argument("--principal", required=True)
    new_key.add_argument("--file", type=Path, help="keys file to add the digest to")
    new_key.set_defaults(func=cmd_key_new)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The client commands have no --log-level: their output is the display, not a log.
    if hasattr(args, "log_format"):
        args.log_format = args.log_format or Settings().log_format
    logs.setup(getattr(args, "log_level", "warning"), getattr(args, "log_format", "text"))
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
