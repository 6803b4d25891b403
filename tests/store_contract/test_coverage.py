"""The suite covers the whole contract, capability by capability: each protocol of
``outlast/store/contract/`` has its one module here, and that module calls every public
method of the protocol, so the next method added to a capability cannot go untested by
it. Every public method of ``Store`` and of the mixins both backends share belongs to one
capability, so none escapes the suite that holds the two backends together. The other
modules test what spans capabilities (``ACROSS``)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from outlast.store import Store
from outlast.store.assistants import AssistantOps
from outlast.store.contract import (
    CAPABILITIES,
    ActivityStore,
    AssistantStore,
    CronStore,
    EffectStore,
    EventStore,
    ItemStore,
    LangGraphStore,
    LifecycleStore,
    OutboxStore,
    RunStore,
    SecretStore,
    ThreadStore,
    WaitStore,
)
from outlast.store.cron_ops import CronOps
from outlast.store.event_ops import EventOps
from outlast.store.ledger_ops import LedgerOps
from outlast.store.lgthreads import LangGraphOps
from outlast.store.outbox_ops import OutboxOps
from outlast.store.park_ops import ParkOps
from outlast.store.run_ops import ActivityOps, RunReadOps, ThreadOps
from outlast.store.secrets_ops import SecretsOps
from outlast.store.transition_ops import TransitionOps
from outlast.store.wait_ops import WaitOps

HERE = Path(__file__).parent
# The names the contract modules give a store under test.
RECEIVERS = frozenset({"store", "fresh", "reopened"})

MODULES: dict[type, str] = {
    LifecycleStore: "test_lifecycle.py",
    RunStore: "test_runs_and_leases.py",
    EventStore: "test_events.py",
    WaitStore: "test_waits_and_signals.py",
    ThreadStore: "test_threads.py",
    ActivityStore: "test_activity_and_budget.py",
    EffectStore: "test_effects.py",
    OutboxStore: "test_outbox.py",
    SecretStore: "test_secrets.py",
    AssistantStore: "test_assistants.py",
    LangGraphStore: "test_langgraph_face.py",
    ItemStore: "test_items.py",
    CronStore: "test_crons.py",
}
ACROSS = {
    "test_eager_start.py",  # a run claimed as it is created, on each way a run is created
    "test_compensation.py",  # the runs' transitions of a run that owes compensations
    "test_rollback.py",  # the runs' transitions of a run that owes a rollback
    "test_checkpointers.py",  # LangGraph's conformance suite on the savers stores hand out
    "test_coverage.py",
    "test_ttl.py",  # expiry across capabilities: items (ItemStore), threads (LangGraphStore)
}
# Methods a capability has for what spans capabilities: exercised by that module instead.
SPANNING: dict[type, str] = {LangGraphStore: "test_ttl.py", ItemStore: "test_ttl.py"}
MIXINS = (
    RunReadOps,
    EventOps,
    WaitOps,
    ParkOps,
    ThreadOps,
    ActivityOps,
    TransitionOps,
    AssistantOps,
    LangGraphOps,
    CronOps,
    SecretsOps,
    LedgerOps,
    OutboxOps,
)


def _public(cls: type) -> set[str]:
    """The methods and properties ``cls`` itself defines (not those it inherits)."""
    return {
        name
        for name, member in vars(cls).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    }


def exercised(module: Path) -> set[str]:
    """Attributes a module reaches on a store (``store.claim(...)``, ``store.items``)."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in RECEIVERS
        ):
            used.add(node.attr)
    return used


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_each_capability_is_exercised_by_its_module(capability: type) -> None:
    module = HERE / MODULES[capability]
    spanning = HERE / SPANNING[capability] if capability in SPANNING else module
    missing = sorted(_public(capability) - exercised(module) - exercised(spanning))
    assert not missing, f"{capability.__name__} methods {module.name} never calls: {missing}"


def test_one_module_per_capability() -> None:
    assert set(MODULES) == set(CAPABILITIES)
    assert len(set(MODULES.values())) == len(MODULES)
    # a new module says which capability it tests, or that it spans several
    assert {p.name for p in HERE.glob("test_*.py")} == set(MODULES.values()) | ACROSS


def test_the_contract_is_what_the_backends_implement() -> None:
    assert Store.__bases__ == CAPABILITIES  # Store is the union, and adds nothing
    members = [name for capability in CAPABILITIES for name in _public(capability)]
    assert len(members) == len(set(members)), "a method in two capabilities"
    assert set(Store.__abstractmethods__) | _public(Store) <= set(members)
    # the mixins add nothing public that no capability declares: a backend-specific
    # method would escape the suite that holds the two backends together
    for mixin in MIXINS:
        assert _public(mixin) <= set(members), (mixin.__name__, _public(mixin) - set(members))
    assert len(members) > 50
    assert all(inspect.iscoroutinefunction(getattr(Store, n)) for n in ("claim", "append"))
