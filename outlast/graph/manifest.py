"""The deployment's ``langgraph.json``, read once and checked before anything starts.

A LangGraph Platform app comes with its ``langgraph.json``; outlast serves it as it is.
Every key is checked against the shape LangGraph's server accepts (``langgraph_cli``'s
schema, written here as pydantic models: that schema's ``TypedDict``s cannot be validated
on Python 3.11), so a wrong type stops the server at start-up with the key's path and
why, rather than failing on the first request that needs it. A file named that does not
exist stops it too (``langgraph dev`` refuses it as well), and so does a key LangGraph
does not know that is close to one it does (``grpahs``: "did you mean `graphs`?"): served
as it is, the app would lose what the key meant (its graphs replaced by outlast's demo
ones, its auth, its routes). Keys that are well formed but that outlast does not honour
yet (``ignored``), and keys LangGraph does not know and that are close to none
(``Manifest.unknown``: LangGraph's server ignores them, its ``langgraph validate`` warns),
are listed at start-up with a warning: never silently dropped. So is an ``env`` file that
does not exist (``Manifest.missing_env``): LangGraph's server starts without it.

``HONOURED`` is the one list of what outlast does with the file: a key is added there by
the change that implements it; ``LANGGRAPH_KEYS`` is the one list of what LangGraph knows.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

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
    # the file read (None: no configuration was given, nor ./langgraph.json found)
    _source: Path | None = PrivateAttr(default=None)
    # keys LangGraph does not know, close to none it does: a warning (see ``read``)
    _unknown: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def read(cls, path: Path | None) -> Manifest:
        """The file at ``path``; an empty manifest when none was given (``None``). A path
        that does not exist, a file that is not JSON, a key of the wrong shape, and a key
        LangGraph does not know that is close to one it does: a ``ManifestError``."""
        if path is None:
            return cls(base_dir=Path.cwd())
        if not path.exists():
            raise ManifestError(f"{path}: no such file")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ManifestError(f"{path}: not a valid langgraph.json: {exc}") from exc
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: not a valid langgraph.json: not a JSON object")
        typos, unknown = unknown_keys(data)
        if typos:
            raise ManifestError(f"{path}: {'; '.join(typos)}")
        data.pop("base_dir", None)  # not a LangGraph key: never taken from the file
        try:
            manifest = cls.model_validate({**data, "base_dir": path.resolve().parent})
        except ValidationError as exc:
            raise ManifestError(f"{path}: {_describe(exc)}") from exc
        manifest._source = path
        manifest._unknown = tuple(unknown)
        return manifest

    @property
    def source(self) -> Path | None:
        """The file this was read from; None when no configuration was given."""
        return self._source

    @property
    def unknown(self) -> list[str]:
        """The keys LangGraph does not know, dotted, none of them close to one it does:
        LangGraph's server ignores them (its ``langgraph validate`` warns); so does
        outlast, with a warning."""
        return list(self._unknown)

    def graphs_or_refuse(self) -> dict[str, str]:
        """``graph_targets``, or a ``ManifestError`` when a file was given with none
        (``langgraph dev`` refuses it too: "No graphs found in config")."""
        targets = self.graph_targets()
        if not targets and self._source is not None:
            raise ManifestError(
                f'{self._source}: no graphs: add at least one under "graphs", as '
                '{"graphs": {"agent": "./my_agent/graph.py:graph"}}'
            )
        return targets

    @property
    def missing_env(self) -> Path | None:
        """``env``'s file when it names one that does not exist (a warning: LangGraph's
        server reads it as empty and starts)."""
        if isinstance(self.env, str):
            path = self.base_dir / self.env
            if not path.is_file():
                return path
        return None

    def apply_env(self) -> None:
        """``env``: variables for the graphs, an object or a ``.env`` file beside the
        manifest (one that does not exist sets nothing: ``missing_env``, warned at start).
        The process's own environment wins: an operator's setting overrides the app's
        default, as a container's environment does."""
        values: dict[str, str | None]
        if isinstance(self.env, str):
            if self.missing_env is not None:
                return
            values = dotenv_values(self.base_dir / self.env)
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
        "_INTERNAL_docker_tag",
        "$schema",  # where an editor finds the file's JSON schema: nothing to serve
    }
)


def ignored(manifest: Manifest) -> list[str]:
    """The keys present in the file that LangGraph knows and outlast does not honour,
    dotted, sorted (the ones LangGraph does not know are ``Manifest.unknown``)."""
    out: list[str] = []
    unknown = set(manifest.unknown)
    for key in manifest.model_fields_set | set(manifest.model_extra or {}):
        if key in HONOURED or key in BUILD_KEYS or key == "base_dir" or key in unknown:
            continue
        value = getattr(manifest, key, None)
        if isinstance(value, BaseModel):
            out += [
                f"{key}.{sub}"
                for sub in _present(value)
                if f"{key}.{sub}" not in HONOURED and f"{key}.{sub}" not in unknown
            ]
        else:
            out.append(key)
    return sorted(out)


def warnings(manifest: Manifest) -> list[str]:
    """What the server says at start about a file it serves (one line each): the keys it
    does not honour yet, the keys LangGraph does not know, an ``env`` file missing."""
    where = manifest.source
    out: list[str] = []
    if keys := ignored(manifest):
        out.append(f"{where}: outlast does not honour these keys yet: {', '.join(keys)}")
    if keys := manifest.unknown:
        out.append(
            f"{where}: LangGraph does not know these keys, and ignores them: {', '.join(keys)}"
        )
    if (env := manifest.missing_env) is not None:
        out.append(f"{where}: env: {env} does not exist; no variables are read from it")
    return out


# Every key LangGraph reads, by section (dotted; "" the top level): those of its CLI
# (langgraph-cli 0.4.40: ``schemas.Config`` and the keys ``validate_config`` knows) and of
# its server (langgraph-api 0.16.7: its ``config.schemas``). A key of a section listed here
# that is not in its list is one LangGraph does not know: close to one it does (difflib's
# ratio, at least 0.6, as ``langgraph validate`` decides "did you mean"), a typo, refused;
# close to none, a warning. Sections not listed (``graphs``, ``env``, ``auth.openapi``,
# ``webhooks.headers``) hold the app's own names.
LANGGRAPH_KEYS: dict[str, frozenset[str]] = {
    "": frozenset(
        {
            *("python_version", "node_version", "api_version", "base_image"),
            *("image_distro", "pip_config_file", "pip_installer", "source"),
            *("dependencies", "dockerfile_lines", "graphs", "env", "store", "auth"),
            *("encryption", "priority", "http", "webhooks", "checkpointer", "ui"),
            *("ui_config", "keep_pkg_tools", "_INTERNAL_docker_tag", "project_root"),
            *("package", "$schema"),
        }
    ),
    "auth": frozenset(
        {"path", "disable_studio_auth", "allow_langsmith_api_keys", "openapi", "cache"}
    ),
    "auth.cache": frozenset({"cache_keys", "ttl_seconds", "max_size"}),
    "http": frozenset(
        {
            *("app", "cors", "configurable_headers", "logging_headers", "mount_prefix"),
            *("middleware_order", "enable_custom_route_auth", "disable_assistants"),
            *("disable_threads", "disable_runs", "disable_store", "disable_meta"),
            *("disable_webhooks", "disable_ui", "disable_mcp", "disable_a2a"),
        }
    ),
    "http.cors": frozenset(
        {
            *("allow_origins", "allow_methods", "allow_headers", "allow_credentials"),
            *("allow_origin_regex", "expose_headers", "max_age"),
        }
    ),
    "http.configurable_headers": frozenset({"includes", "excludes", "include", "exclude"}),
    "http.logging_headers": frozenset({"includes", "excludes", "include", "exclude"}),
    "store": frozenset({"path", "index", "ttl"}),
    "store.index": frozenset({"dims", "embed", "fields"}),
    "store.ttl": frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes"}),
    "checkpointer": frozenset({"backend", "path", "uri", "ttl", "serde"}),
    "checkpointer.ttl": frozenset(
        {"strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit"}
    ),
    "checkpointer.serde": frozenset(
        {"allowed_json_modules", "allowed_msgpack_modules", "pickle_fallback"}
    ),
    "webhooks": frozenset({"env_prefix", "url", "headers", "allowed_fields"}),
    "webhooks.url": frozenset(
        {
            *("require_https", "allowed_domains", "allowed_ports", "max_url_length"),
            *("disable_loopback", "disable_private_ips"),
        }
    ),
    "encryption": frozenset({"path"}),
    "priority": frozenset({"path"}),
    "source": frozenset({"kind", "root", "package"}),
}


def unknown_keys(data: dict[str, Any], section: str = "") -> tuple[list[str], list[str]]:
    """The keys of ``data`` (a section of the file, ``section`` its dotted name) that
    LangGraph does not know: (each one close to a known key, said with the key it is
    likely to mean; the others, dotted), in file order, the sub-sections looked into."""
    known = LANGGRAPH_KEYS[section]
    typos: list[str] = []
    unknown: list[str] = []
    for key, value in data.items():
        dotted = f"{section}.{key}" if section else key
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            if close:
                near = f"{section}.{close[0]}" if section else close[0]
                typos.append(f"{dotted}: not a key LangGraph knows; did you mean `{near}`?")
            else:
                unknown.append(dotted)
        elif dotted in LANGGRAPH_KEYS and isinstance(value, dict):
            more_typos, more_unknown = unknown_keys(value, dotted)
            typos += more_typos
            unknown += more_unknown
    return typos, unknown


def _present(section: BaseModel) -> list[str]:
    return sorted(section.model_fields_set | set(section.model_extra or {}))


def _describe(exc: ValidationError) -> str:
    """Each problem as ``key.path: why``: the key to fix, not pydantic's whole report."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)
    )
