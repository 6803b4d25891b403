"""What every ``outlast`` server command shares: the console it speaks on, the flags every
server command takes, the settings they make (flags over ``OUTLAST_*``), the check of
``langgraph.json`` before anything starts, and how the store is named to a person."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from outlast import processes
from outlast.config import Settings

if TYPE_CHECKING:
    from outlast.graph.manifest import Manifest

console = Console(stderr=True)


def common_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", help="postgresql://… (default: SQLite in --data-dir)")
    parser.add_argument("--data-dir", type=Path, help="folder of the embedded store (.outlast)")
    parser.add_argument(
        "--config",
        dest="graphs_file",
        type=Path,
        help="the app's langgraph.json (default: ./langgraph.json if there is one; "
        "with none, outlast's demo graphs)",
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


def settings_from(args: argparse.Namespace, *keys: str) -> Settings:
    overrides: dict[str, Any] = {}
    for key in ("database_url", "data_dir", "graphs_file", "graphs", *keys):
        value = getattr(args, key, None)
        if value is not None:
            overrides[key] = value
    return Settings(**overrides)


def describe(settings: Settings) -> str:
    if settings.database_url:
        return (
            settings.database_url.split("@")[-1]
            if "@" in settings.database_url
            else settings.database_url
        )
    return f"SQLite in {settings.data_dir}/ (embedded default)"


def checked_config(settings: Settings) -> Manifest | None:
    """``langgraph.json`` read and checked as every command that reads it does before it
    starts (``serve``, ``worker``, ``migrate``, ``secrets``): a file named that does not
    exist, a key of the wrong shape, a key close to one LangGraph knows, a file with no
    graphs (and no ``--graph``) are said on stderr, one line, and ``None`` is returned (the
    command exits 2); the keys outlast does not honour yet, the ones LangGraph does not
    know, a missing ``env`` file are warned once (not again by each child of
    ``--workers N``: the parent spoke)."""
    from outlast.graph.manifest import Manifest, ManifestError, warnings

    try:
        manifest = Manifest.read(settings.graphs_file)
        if not settings.graphs:  # --graph gives graphs a file may leave out
            manifest.graphs_or_refuse()
    except ManifestError as exc:
        refuse(settings, str(exc))
        return None
    if not processes.is_child():
        for said in warnings(manifest):
            console.print(f"[yellow]warning:[/] {escape(said)}", soft_wrap=True)
    return manifest


def refuse(settings: Settings, why: str) -> None:
    """The one line on stderr that says why the configuration cannot be served."""
    where = str(settings.graphs_file or "the configuration")
    why = why.removeprefix(f"{where}: ")  # a ManifestError names the file first
    console.print(f"[red]cannot serve {escape(where)}[/]: {escape(why)}", soft_wrap=True)
