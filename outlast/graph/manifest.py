"""The deployment's ``langgraph.json``, read once and checked before anything starts.

A LangGraph Platform app comes with its ``langgraph.json``; outlast serves it as it is.
Every key is checked against the shape LangGraph's server accepts (``langgraph_cli``'s
schema, written here as pydantic models: that schema's ``TypedDict``s cannot be validated
on Python 3.11), so a wrong type stops the server at start-up with the key's path and
why, rather than failing on the first request that needs it. Keys that are well formed
but that outlast does not honour yet, and keys LangGraph does not know, are listed at
start-up with a warning (``ignored``): never silently dropped.

``HONOURED`` is the one list of what outlast does with the file: a key is added there by
the change that implements it.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from outlast.errors import GraphLoadError

log = logging.getLogger(__name__)


class ManifestError(GraphLoadError):
    """``langgraph.json`` cannot be served: unreadable, or a key of the wrong shape."""

    title = "langgraph.json cannot be served"


class _Section(BaseModel):
    # unknown sub-keys are kept, to be reported by ``ignored``, not refused
    model_config = ConfigDict(extra="allow", frozen=True)


class GraphDef(_Section):
    path: str
    description: str | None = None


class AuthSection(_Section):
    path: str | None = None
    disable_studio_auth: bool = False
    openapi: dict[str, Any] | None = None
    cache: dict[str, Any] | None = None


class CorsSection(_Section):
    allow_origins: list[str] | None = None
    allow_methods: list[str] | None = None
    allow_headers: list[str] | None = None
    allow_credentials: bool | None = None
    allow_origin_regex: str | None = None
    expose_headers: list[str] | None = None
    max_age: int | None = None


class HeaderSelection(_Section):
    includes: list[str] | None = None
    excludes: list[str] | None = None


class HttpSection(_Section):
    app: str | None = None
    disable_assistants: bool = False
    disable_threads: bool = False
    disable_runs: bool = False
    disable_store: bool = False
    disable_mcp: bool = False
    disable_a2a: bool = False
    disable_meta: bool = False
    disable_ui: bool = False
    disable_webhooks: bool = False
    cors: CorsSection | None = None
    configurable_headers: HeaderSelection | None = None
    logging_headers: HeaderSelection | None = None
    middleware_order: Literal["auth_first", "middleware_first"] | None = None
    enable_custom_route_auth: bool = False
    mount_prefix: str | None = None

    @field_validator("mount_prefix")
    @classmethod
    def _a_path(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or value.endswith("/")):
            raise ValueError('a path that starts with "/" and does not end with one, as "/api"')
        return value


class StoreTTL(_Section):
    refresh_on_read: bool = True
    sweep_interval_minutes: float | None = Field(default=None, gt=0)
    default_ttl: float | None = Field(default=None, gt=0)  # minutes


class StoreIndex(_Section):
    dims: int = Field(gt=0)
    embed: str
    fields: list[str] | None = None


class StoreSection(_Section):
    index: StoreIndex | None = None
    ttl: StoreTTL | None = None


class CheckpointerTTL(_Section):
    strategy: Literal["delete", "keep_latest"] = "delete"
    sweep_interval_minutes: float | None = Field(default=None, gt=0)
    default_ttl: float | None = Field(default=None, gt=0)  # minutes


class CheckpointerSection(_Section):
    ttl: CheckpointerTTL | None = None


class Manifest(_Section):
    """The keys outlast reads; the rest stay in ``model_extra`` for ``ignored``."""

    graphs: dict[str, str | GraphDef] = {}
    env: dict[str, str] | str | None = None
    dependencies: list[str] = []
    auth: AuthSection | None = None
    http: HttpSection | None = None
    store: StoreSection | None = None
    checkpointer: CheckpointerSection | None = None
    base_dir: Path = Path(".")  # where the file is: relative paths in it start here

    @classmethod
    def read(cls, path: Path | None) -> Manifest:
        """The file at ``path``; an empty manifest when there is none."""
        if path is None or not path.exists():
            return cls(base_dir=Path.cwd())
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ManifestError(f"{path}: not a valid langgraph.json: {exc}") from exc
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: not a valid langgraph.json: not a JSON object")
        data.pop("base_dir", None)  # not a LangGraph key: never taken from the file
        try:
            return cls.model_validate({**data, "base_dir": path.resolve().parent})
        except ValidationError as exc:
            raise ManifestError(f"{path}: {_describe(exc)}") from exc

    def apply_env(self) -> None:
        """``env``: variables for the graphs, an object or a ``.env`` file beside the
        manifest. The process's own environment wins: an operator's setting overrides
        the app's default, as a container's environment does."""
        values: dict[str, str | None]
        if isinstance(self.env, str):
            path = self.base_dir / self.env
            if not path.exists():
                raise ManifestError(f"env: {path} does not exist")
            values = dotenv_values(path)
        else:
            values = dict(self.env or {})
        for name, value in values.items():
            if value is not None:
                os.environ.setdefault(name, value)

    def graph_targets(self) -> dict[str, str]:
        return {
            name: entry if isinstance(entry, str) else entry.path
            for name, entry in self.graphs.items()
        }


# What outlast does with each key, dotted; a section's sub-keys not listed are ignored.
# LangGraph's build-time keys (the image it builds) mean nothing to a server you run.
HONOURED = frozenset(
    {
        "graphs",
        "env",
        "dependencies",
        "auth.path",
        "store.ttl",
        "store.index",
        "checkpointer.ttl",
        *(
            f"http.{key}"
            for key in (
                "app",
                "cors",
                "configurable_headers",
                "middleware_order",
                "enable_custom_route_auth",
                "mount_prefix",
                "disable_assistants",
                "disable_threads",
                "disable_runs",
                "disable_store",
                "disable_mcp",
                "disable_a2a",
                "disable_meta",
                "disable_ui",
                "disable_webhooks",
                "logging_headers",
            )
        ),
    }
)
BUILD_KEYS = frozenset(
    {
        "python_version",
        "node_version",
        "api_version",
        "base_image",
        "image_distro",
        "pip_config_file",
        "pip_installer",
        "source",
        "dockerfile_lines",
        "keep_pkg_tools",
        "$schema",  # where an editor finds the file's JSON schema: nothing to serve
    }
)


def ignored(manifest: Manifest) -> list[str]:
    """The keys present in the file that outlast does not honour, dotted, in file order."""
    out: list[str] = []
    for key in manifest.model_fields_set | set(manifest.model_extra or {}):
        if key in HONOURED or key in BUILD_KEYS or key == "base_dir":
            continue
        value = getattr(manifest, key, None)
        if isinstance(value, BaseModel):
            out += [f"{key}.{sub}" for sub in _present(value) if f"{key}.{sub}" not in HONOURED]
        else:
            out.append(key)
    return sorted(out)


def warn_ignored(manifest: Manifest, where: Path | None) -> list[str]:
    keys = ignored(manifest)
    if keys:
        log.warning("%s: outlast does not honour these keys yet: %s", where, ", ".join(keys))
    return keys


def _present(section: BaseModel) -> list[str]:
    return sorted(section.model_fields_set | set(section.model_extra or {}))


def _describe(exc: ValidationError) -> str:
    """Each problem as ``key.path: why``: the key to fix, not pydantic's whole report."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
    )
