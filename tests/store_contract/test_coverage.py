"""The suite covers the whole contract: every public method of ``Store`` (its abstract
methods and what it implements itself) and of the mixins both backends share is called
by some contract module, so the next method added cannot go untested."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from outlast.store import Store
from outlast.store.assistants import AssistantOps
from outlast.store.common import SharedRunOps
from outlast.store.lgthreads import LangGraphOps
from outlast.store.secrets_ops import SecretsOps
from outlast.store.transition_ops import TransitionOps

HERE = Path(__file__).parent
# The names the contract modules give a store under test.
RECEIVERS = frozenset({"store", "fresh", "reopened"})


def _public(cls: type) -> set[str]:
    return {
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


def contract() -> set[str]:
    names = set(Store.__abstractmethods__) | _public(Store)
    for mixin in (SharedRunOps, TransitionOps, AssistantOps, LangGraphOps, SecretsOps):
        names |= _public(mixin)
    return {n for n in names if not n.startswith("_")}


def exercised() -> set[str]:
    """Attributes the modules reach on a store (``store.claim(...)``, ``store.items``)."""
    used: set[str] = set()
    for module in HERE.glob("test_*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in RECEIVERS
            ):
                used.add(node.attr)
    return used


def test_every_store_method_is_exercised() -> None:
    missing = sorted(contract() - exercised())
    assert not missing, f"Store methods no contract module calls: {missing}"


def test_the_contract_is_what_the_backends_implement() -> None:
    # the mixins add nothing public that Store does not declare: a backend-specific
    # method would escape the suite that holds the two backends together
    declared = set(Store.__abstractmethods__) | _public(Store)
    for mixin in (SharedRunOps, TransitionOps, AssistantOps, LangGraphOps, SecretsOps):
        assert _public(mixin) <= declared, sorted(_public(mixin) - declared)
    assert len(contract()) > 50
    assert all(inspect.iscoroutinefunction(getattr(Store, n)) for n in ("claim", "append"))
