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

from rich.console import Console

from outlast import __version__, heap, logs, processes
from outlast.config import Settings

console = Console(stderr=True)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", help="postgresql://… (default: SQLite in --data-dir)")
    parser.add_argument("--data-dir", type=Path, help="folder of the embedded store (.outlast)")
    parser.add_argument(
        "--config",
        dest="graphs_file",
        type=Path,
        help="langgraph.json listing the graphs (default: ./langgraph.json)",
    )
    parser.add_argument(
        "--graph",
        dest="graphs",
        action="append",
        help="extra graph as name=module:attr or name=path.py:attr (repeatable)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    parser.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="json: one object per line with run_id, thread_id, trace_id (OUTLAST_LOG_FORMAT)",
    )


def _settings(args: argparse.Namespace, *keys: str) -> Settings:
    overrides: dict[str, Any] = {}
    for key in ("database_url", "data_dir", "graphs_file", "graphs", *keys):
        value = getattr(args, key, None)
        if value is not None:
            overrides[key] = value
    return Settings(**overrides)


def _describe(settings: Settings) -> str:
    if settings.database_url:
        return (
            settings.database_url.split("@")[-1]
            if "@" in settings.database_url
            else settings.database_url
        )
    return f"SQLite in {settings.data_dir}/ (embedded default)"


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args, "host", "port", "worker_concurrency", "insecure_no_auth", "workers")
    from outlast.api.auth import KeyRing

    keys = KeyRing.load(settings.api_keys, settings.api_keys_file)
    loopback = settings.host in ("127.0.0.1", "::1", "localhost")
    if not keys.enabled and not loopback and not settings.insecure_no_auth:
        console.print(
            f"[red]refusing to listen on {settings.host} without API keys[/]: anyone who can "
            "reach it could read and steer every run. Set OUTLAST_API_KEYS or "
            "OUTLAST_API_KEYS_FILE (see `outlast key new`), or pass --insecure-no-auth."
        )
        return 2
    count = _process_count(settings)
    if count is None or not _manifest_ok(settings):
        return 2
    inherited = processes.inherited_socket()
    if count > 1:
        sock = inherited or processes.bind(settings.host, settings.port)
        console.print(
            f"[bold]outlast {__version__}[/] serving on "
            f"[cyan]http://{settings.host}:{settings.port}[/] with {count} processes"
        )
        return processes.supervise(sys.argv[1:], count, sock)
    processes.die_with_parent()
    base = f"http://{settings.host}:{settings.port}"
    if inherited is None:  # a child of --workers N (given its socket) is quiet: the parent spoke
        _banner(settings, keys, loopback, base, args.no_worker)
    return _serve_one(args, settings, inherited)


def _serve_one(args: argparse.Namespace, settings: Settings, sock: Any) -> int:
    """This process serves (with its embedded worker unless ``--no-worker``); 1 when the
    worker stopped by itself, so that a process supervisor replaces the process."""
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from outlast.api.app import create_app

    failed: list[BaseException] = []
    server: list[uvicorn.Server] = []

    def worker_failed(exc: BaseException) -> None:
        failed.append(exc)
        for running in server:
            running.should_exit = True

    app = create_app(
        settings,
        with_worker=not args.no_worker,
        on_worker_failed=worker_failed,
        settle_heap=True,
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=5,
        # uvicorn closes an idle connection after 5 s, as httpx expires its own: a client
        # that reuses one as the server closes it gets a ReadError for a request that was
        # never read (seen with 200 clients in bench/peers.py). The side that closes first
        # must be the client.
        timeout_keep_alive=settings.http_keep_alive,
        # uvicorn's own config would give its loggers text handlers; JSON goes through root.
        log_config=None if args.log_format == "json" else logs.uvicorn_config(LOGGING_CONFIG),
    )
    server.append(uvicorn.Server(config))
    server[0].run(sockets=[sock] if sock is not None else None)
    return 1 if failed else 0


def _manifest_ok(settings: Settings) -> bool:
    """``langgraph.json`` checked before anything starts: a key of the wrong shape stops
    the server here, naming the key; keys outlast ignores are listed (a warning)."""
    from outlast.api.user_app import UserApp
    from outlast.graph.manifest import Manifest, ManifestError, ignored

    try:
        manifest = Manifest.read(settings.graphs_file)
        UserApp.load(manifest)  # http.app imports and is an ASGI app
    except ManifestError as exc:
        console.print(f"[red]cannot serve {settings.graphs_file}[/]: {exc}")
        return False
    keys = ignored(manifest)
    if keys and processes.inherited_socket() is None:  # the parent of --workers N spoke
        console.print(
            f"[yellow]warning:[/] {settings.graphs_file}: outlast does not honour these "
            f"keys yet: {', '.join(keys)}"
        )
    return True


def _process_count(settings: Settings) -> int | None:
    """How many processes ``--workers`` asks for (None: refused, and said why)."""
    postgres = bool(settings.database_url)
    count = settings.workers or processes.default_workers(postgres)
    if count > 1 and not postgres:
        console.print(
            "[red]--workers above 1 needs Postgres[/] (--database-url): the embedded "
            "store notifies only within its own process"
        )
        return None
    return count


def _banner(settings: Settings, keys: Any, loopback: bool, base: str, no_worker: bool) -> None:
    console.print(f"[bold]outlast {__version__}[/] serving on [cyan]{base}[/]")
    console.print(f"  store: {_describe(settings)}")
    if keys.enabled:
        console.print(f"  auth:  API keys for {len(set(keys.principals.values()))} principal(s)")
    else:
        console.print(
            "  auth:  [yellow]none[/] (no API keys"
            + (": loopback only)" if loopback else "; --insecure-no-auth)")
        )
    console.print(
        f"  worker: {'none (--no-worker)' if no_worker else 'in-process'}   docs: {base}/docs"
    )
    console.print(
        f"  try:   curl -si -X POST {base}/v1/runs -H 'content-type: application/json' "
        '-d \'{"input": {"messages": [{"role": "user", "content": "hello"}]}}\''
    )
    console.print(f"         curl -N {base}/v1/runs/<id>/events")


async def _worker_main(settings: Settings) -> None:
    from outlast.api.lg.cron_runs import firer
    from outlast.api.webhooks import BODIES
    from outlast.graph.registry import GraphRegistry
    from outlast.runtime.worker import Worker
    from outlast.store import make_store

    store = make_store(settings)
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
        console.print(
            f"[bold]outlast worker[/] {worker.id} on {_describe(settings)}; "
            f"graphs: {', '.join(graphs.names)}"
        )
        await worker.run()
        console.print(f"worker {worker.id} stopped after {worker.completed} run(s)")
    finally:
        await store.close()


def cmd_worker(args: argparse.Namespace) -> int:
    settings = _settings(args, "worker_concurrency", "workers")
    count = _process_count(settings)
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
    from outlast.store import make_store

    store = make_store(settings)
    await store.open()
    try:
        return await store.migrate()
    finally:
        await store.close()


def cmd_migrate(args: argparse.Namespace) -> int:
    settings = _settings(args)
    applied = asyncio.run(_migrate(settings))
    console.print(
        f"{_describe(settings)}: " + (f"applied {', '.join(applied)}" if applied else "up to date")
    )
    return 0


async def _secrets(settings: Settings, rotate: bool) -> tuple[int, int, int, int]:
    """(sealed, opened by an older key, unreadable, re-sealed)."""
    from outlast.secretbox import SecretBox
    from outlast.store import make_store

    box = SecretBox.from_settings(settings)
    store = make_store(settings)
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
    settings = _settings(args)
    rotate = args.secrets_command == "rotate"
    total, older, unreadable, resealed = asyncio.run(_secrets(settings, rotate))
    said = f"{total} sealed secret(s): {total - older - unreadable} with the first key"
    said += f", {older} with an older key" + (f" ({resealed} re-sealed)" if rotate else "")
    console.print(f"{_describe(settings)}: {said}, {unreadable} unreadable")
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
    _common(serve)
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
    _common(worker)
    worker.add_argument("--concurrency", dest="worker_concurrency", type=int)
    worker.add_argument(
        "--workers", type=int, help="processes (default: the cores with Postgres, else 1)"
    )
    worker.set_defaults(func=cmd_worker)

    migrate = sub.add_parser("migrate", help="create or upgrade the database schema")
    _common(migrate)
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
        _common(command)
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


if __name__ == "__main__":
    sys.exit(main())
