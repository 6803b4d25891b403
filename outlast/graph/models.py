"""Which chat model a run uses, chosen by name, checked before the run is accepted.

``OUTLAST_MODEL="provider:model"`` (or ``configurable.model`` in a run's config) goes
through LangChain's ``init_chat_model``, so any chat model with a LangChain integration
plugs in; ``OUTLAST_MODEL_BASE_URL`` points an OpenAI-compatible client at any server
(vLLM, Ollama, LM Studio …). With neither, the model is ``scripted``: the deterministic
offline model of :mod:`outlast.graph.scripted`.

The API resolves the name when it accepts a run (``GraphRegistry.model_for``, on both
faces) and writes it into the run's config: every worker then uses the model the run was
accepted with, whatever its own environment says, and a missing provider package or API
key is a ``422`` at acceptance, not a crash minutes later inside a worker.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.pregel import Pregel

from outlast.config import ModelSettings
from outlast.errors import OutlastError
from outlast.graph.scripted import NAME as SCRIPTED
from outlast.graph.scripted import ScriptedChatModel

# Marks a graph whose runs need a model (read by ``GraphRegistry.model_for`` when the API
# accepts a run).
USES_MODEL = "outlast_uses_model"

# The environment variable each provider's LangChain integration reads its key from.
API_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "together": "TOGETHER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "cohere": "COHERE_API_KEY",
}


class ModelUnavailable(OutlastError):
    """The named model cannot be used here (no provider package, no key, bad name).
    Not retryable: the same request fails the same way until the deployment changes."""

    status = 422
    title = "Model unavailable"


def default_model() -> str:
    return ModelSettings().model.strip() or SCRIPTED


def model_name(configurable: dict[str, Any] | None) -> str:
    named = (configurable or {}).get("model")
    return str(named).strip() if named else default_model()


def mark_uses_model(graph: Pregel[Any, Any, Any, Any]) -> Pregel[Any, Any, Any, Any]:
    """Say that this graph's runs call a model chosen by :func:`model_name`."""
    return graph.with_config(metadata={USES_MODEL: True})


def uses_model(graph: Pregel[Any, Any, Any, Any]) -> bool:
    return bool((graph.config or {}).get("metadata", {}).get(USES_MODEL))


def _split(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition(":")
    if not sep or not provider or not model:
        raise ModelUnavailable(
            f"model {name!r}: use 'provider:model' (for example 'openai:gpt-4o-mini' or "
            f"'anthropic:claude-sonnet-4-5'), or {SCRIPTED!r} for the offline scripted model"
        )
    return provider, model


def chat_model(name: str, *, delay: float = 0.0) -> BaseChatModel:
    """The chat model called ``name``; raises :class:`ModelUnavailable` with what to do."""
    if name == SCRIPTED:
        return ScriptedChatModel(delay=delay)
    provider, model = _split(name)
    base_url = ModelSettings().model_base_url or None
    options: dict[str, Any] = {}
    if base_url:
        options["base_url"] = base_url
    key = API_KEYS.get(provider)
    if key and not os.environ.get(key):
        if base_url and provider == "openai":
            # An OpenAI-compatible local server usually needs no key, but the client
            # insists on one.
            secret = ModelSettings().model_api_key
            options["api_key"] = secret.get_secret_value() if secret else "unused"
        else:
            raise ModelUnavailable(f"model {name!r}: {key} is not set in the environment")
    from langchain.chat_models import init_chat_model

    try:
        built: BaseChatModel = init_chat_model(model, model_provider=provider, **options)
        return built
    except ImportError as exc:
        raise ModelUnavailable(
            f"model {name!r}: the LangChain package for {provider!r} is not installed: {exc}"
        ) from exc
    except Exception as exc:  # the provider's own validation (unknown provider, bad key …)
        raise ModelUnavailable(f"model {name!r}: {type(exc).__name__}: {exc}") from exc


def check_model(name: str) -> str:
    """Build the model once (cheap: no network) so a bad name fails now; returns it."""
    chat_model(name)
    return name
