"""The settings of the parts that also run without a server (a graph in a notebook, the
terminal client, a worker's fault points), one small model per concern, read afresh on
every call: a notebook or a test changes the environment between calls, and each is read
once per run or per command, never per event. With ``outlast.config`` (the server's
``Settings``), the only modules that read an ``OUTLAST_*`` variable."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

_ENV = SettingsConfigDict(env_prefix="OUTLAST_", extra="ignore")


class ModelSettings(BaseSettings):
    """The chat models graphs and the supervisor call (``graph/models.py``, ``supervisor``)."""

    model_config = _ENV

    model: str = Field(default="", description="provider:model; unset = the scripted model")
    model_base_url: str | None = Field(
        default=None, description="an OpenAI-compatible server to call instead"
    )
    model_api_key: SecretStr | None = Field(
        default=None, description="the key for model_base_url (never shown)"
    )
    supervisor_model: str = Field(
        default="", description="provider:model of the supervisor's semantic verdict"
    )
    supervisor_first_model: str = Field(
        default="",
        description="a cheaper provider:model for an operation's first look, with "
        "supervisor_model set too: the stronger one judges an operation extended already",
    )
    supervisor_timeout: float = Field(
        default=30.0,
        gt=0,
        description="seconds the supervisor's model may take to answer, retries included; "
        "past them the call counts as failed and the ladder goes on without it",
    )


class WorkspaceSettings(BaseSettings):
    """Where the reference agent's tools may read and write (``graph/tools.py``)."""

    model_config = _ENV

    workspace_root: Path = Field(
        default=Path("."), description="every folder the reference agent's tools use lies inside it"
    )
    data_dir: Path = Field(
        default=Path(".outlast"), description="where the tools write reports and emails"
    )


class ClientSettings(BaseSettings):
    """The terminal client (``outlast.client``)."""

    model_config = _ENV

    server: str | None = Field(
        default=None, description="the server's URL (else http://127.0.0.1:8000)"
    )


class FaultSettings(BaseSettings):
    """Crash tests' fault points (``faults.py``); only tests set them."""

    model_config = _ENV

    faults: str = Field(
        default="", description="fault points to arm, comma-separated (crash tests)"
    )


def fault_spec() -> str:
    """``OUTLAST_FAULTS`` as it is now (a test arms points while the process runs), read
    through ``FaultSettings`` only when the variable changed: fault points sit in the
    worker's claim loop and in every run, and building the settings reads the whole
    environment (about 0.2 ms, most of a millisecond per run)."""
    return _fault_settings(os.environ.get("OUTLAST_FAULTS")).faults


@functools.lru_cache(maxsize=8)
def _fault_settings(raw: str | None) -> FaultSettings:
    del raw  # the cache key: FaultSettings reads the variable itself
    return FaultSettings()


# Credentials named by tools read ``OUTLAST_CREDENTIAL_<NAME>`` (the ``env`` provider):
# not a setting, as the names are the tools' own, known only when a tool asks, so the
# variable is read here by name at that moment (a notebook may set it between calls).
CREDENTIAL_PREFIX = "OUTLAST_CREDENTIAL_"


def credential_variable(name: str) -> str:
    """``github.app`` → ``OUTLAST_CREDENTIAL_GITHUB_APP``."""
    return CREDENTIAL_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def credential_from_env(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The credential's value from the process environment (or ``environ``, given one
    that is not empty); None when its variable is unset or empty."""
    return (environ or os.environ).get(credential_variable(name)) or None
