"""``outlast serve``: the checks before it listens (API keys or the app's ``auth.py`` beyond
loopback, ``--workers`` on Postgres only, ``langgraph.json`` as a whole), the banner, and
one process serving, or a supervisor of ``--workers N`` sharing one socket."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from outlast import __version__, logs, processes
from outlast.cli.support import checked_config, console, describe, refuse, settings_from
from outlast.config import Settings


def cmd_serve(args: argparse.Namespace) -> int:
    settings = settings_from(
        args, "host", "port", "worker_concurrency", "insecure_no_auth", "workers"
    )
    from outlast.api.auth import KeyRing

    keys = KeyRing.load(settings.api_keys, settings.api_keys_file)
    loopback = settings.host in ("127.0.0.1", "::1", "localhost")
    if not manifest_ok(settings):
        return 2
    app_auth = _app_auth(settings)
    if not (keys.enabled or app_auth) and not loopback and not settings.insecure_no_auth:
        console.print(
            f"[red]refusing to listen on {settings.host} without API keys[/]: anyone who can "
            "reach it could read and steer every run. Set OUTLAST_API_KEYS or "
            "OUTLAST_API_KEYS_FILE (see `outlast key new`), or pass --insecure-no-auth."
        )
        return 2
    count = process_count(settings)
    if count is None:
        return 2
    inherited = processes.inherited_socket()
    if count > 1:
        sock = inherited or processes.bind(settings.host, settings.port)
        console.print(
            f"[bold]outlast {__version__}[/] serving on "
            f"[cyan]http://{settings.host}:{settings.port}[/] with {count} processes"
        )
        _mcp_off()
        return processes.supervise(sys.argv[1:], count, sock)
    processes.die_with_parent()
    base = f"http://{settings.host}:{settings.port}"
    if inherited is None:  # a child of --workers N (given its socket) is quiet: the parent spoke
        _banner(settings, keys if app_auth is None else app_auth, loopback, base, args.no_worker)
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


def manifest_ok(settings: Settings) -> bool:
    """``langgraph.json`` checked before anything starts (``support.checked_config``: a
    mistake stops the server here, naming it; the rest is warned once), and what it
    names imported: the app's ``auth.path`` and ``http.app``."""
    from outlast.api.app import user_auth
    from outlast.api.user_app import UserApp
    from outlast.graph.manifest import ManifestError

    manifest = checked_config(settings)
    if manifest is None:
        return False
    try:
        user_auth(settings)  # an auth.path that does not import stops the server here
        UserApp.load(manifest)  # http.app imports and is an ASGI app
    except ManifestError as exc:
        refuse(settings, str(exc))
        return False
    return True


def _app_auth(settings: Settings) -> str | None:
    """``auth.path`` of ``langgraph.json`` (checked by ``manifest_ok``), if it has one."""
    from outlast.graph.manifest import Manifest

    auth = Manifest.read(settings.graphs_file).auth
    return auth.path if auth is not None and auth.path else None


def process_count(settings: Settings) -> int | None:
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


def _mcp_off() -> None:
    """The MCP face left out (its extra missing, or an app's older ``mcp``): said once."""
    from rich.markup import escape

    from outlast.api.mcp import off

    why = off()
    if why is not None:
        console.print(f"  mcp:   [yellow]off[/]: {escape(why)}", soft_wrap=True)


def _banner(settings: Settings, keys: Any, loopback: bool, base: str, no_worker: bool) -> None:
    console.print(f"[bold]outlast {__version__}[/] serving on [cyan]{base}[/]")
    console.print(f"  store: {describe(settings)}")
    if isinstance(keys, str):
        console.print(f"  auth:  the app's {keys} (langgraph.json auth.path)")
        if settings.auth_default == "deny":
            console.print("         actions no @auth.on handler covers: refused (403)")
    elif keys.enabled:
        console.print(f"  auth:  API keys for {len(set(keys.principals.values()))} principal(s)")
    else:
        console.print(
            "  auth:  [yellow]none[/] (no API keys"
            + (": loopback only)" if loopback else "; --insecure-no-auth)")
        )
    console.print(
        f"  worker: {'none (--no-worker)' if no_worker else 'in-process'}   docs: {base}/docs"
    )
    _mcp_off()
    console.print(
        f"  try:   curl -si -X POST {base}/v1/runs -H 'content-type: application/json' "
        '-d \'{"input": {"messages": [{"role": "user", "content": "hello"}]}}\''
    )
    console.print(f"         curl -N {base}/v1/runs/<id>/events")
