"""What every ``outlast`` server command shares: the console it speaks on, the flags every
server command takes, the settings they make (flags over ``OUTLAST_*``), and how the store
is named to a person."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from outlast.config import Settings

console = Console(stderr=True)


def common_flags(parser: argparse.ArgumentParser) -> None:
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
