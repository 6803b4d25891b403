"""The store contract by capability: what every backend (Postgres, SQLite) must do, and
nothing more, cut into the parts a component can depend on one at a time.

A run row is the durable identity of a piece of work; its event log is the ordered,
persisted view clients replay. Every write a worker makes is fenced by the run's lease
epoch, so a worker that lost its lease (it was presumed dead and its run was taken over)
can no longer change anything. ``Store`` (store/base.py) is the union of every capability
here, and what both backends implement; the contract suite (tests/store_contract/) has one
module per capability, runs it against each implementation, and fails when a method of a
capability goes untested by that capability's module.

| capability | protocol | module |
|---|---|---|
| runs and leases | ``RunStore`` | ``runs.py`` |
| the event log and its retention | ``EventStore`` | ``events.py`` |
| waits and signals | ``WaitStore`` | ``waits.py`` |
| runs on a thread | ``ThreadStore`` | ``threads.py`` |
| activity, supervision and budget | ``ActivityStore`` | ``activity.py`` |
| the effects ledger | ``EffectStore`` | ``effects.py`` |
| webhooks and their outbox | ``OutboxStore`` | ``outbox.py`` |
| secrets at rest | ``SecretStore`` | ``secrets.py`` |
| assistants | ``AssistantStore`` | ``assistants.py`` |
| LangGraph threads and runs | ``LangGraphStore`` | ``lg.py`` |
| LangGraph's item store | ``ItemStore`` | ``items.py`` |
| crons and their scheduler | ``CronStore`` | ``crons.py`` |
| open, close, migrate, ping, savers | ``LifecycleStore`` | ``lifecycle.py`` |

Protocols, not abstract base classes, because a component names what it uses: one that
needs two capabilities declares their intersection where it is used (``class
Needs(RunStore, WaitStore, Protocol)``), and every store, or a test's small fake, satisfies
it by its methods, without a backend having to list each intersection among its bases as
nominal ABCs would require. The backends still inherit them all explicitly (through
``Store``), and each method keeps ``abc.abstractmethod`` (a protocol's metaclass is an
``ABCMeta``), so a backend that misses one fails at construction, and mypy says so first.

Conventions of every method:

- *Fenced* means the write names the run's ``Lease`` and changes something only while
  the row still has that worker and epoch and a leased status (running, cancelling), in
  the same statement or transaction as the write; otherwise it raises ``LeaseLost`` and
  writes nothing.
- *Notifies* lists the hub channels (store/hub.py) a write publishes, keyed by run id,
  after it commits (Postgres: ``NOTIFY`` delivered through the listener). A write that
  changes nothing notifies nobody. A capability whose writes notify is ``Notifying``: it
  has the ``hub`` its followers subscribe to.
- Events appended by the store get the run's next seqs, without holes; their payload keys
  are part of the contract (clients read them).
"""

from __future__ import annotations

from outlast.store.contract.activity import ActivityStore
from outlast.store.contract.assistants import AssistantStore
from outlast.store.contract.crons import CronStore
from outlast.store.contract.effects import EffectStore
from outlast.store.contract.events import EventStore
from outlast.store.contract.items import ItemStore
from outlast.store.contract.lg import LangGraphStore
from outlast.store.contract.lifecycle import LifecycleStore
from outlast.store.contract.outbox import OutboxStore
from outlast.store.contract.runs import RunStore
from outlast.store.contract.secrets import SecretStore
from outlast.store.contract.threads import ThreadStore
from outlast.store.contract.waits import WaitStore
from outlast.store.hub import Notifying

# Every capability, in the order ``Store`` inherits them.
CAPABILITIES = (
    LifecycleStore,
    RunStore,
    EventStore,
    WaitStore,
    ThreadStore,
    ActivityStore,
    EffectStore,
    OutboxStore,
    SecretStore,
    AssistantStore,
    LangGraphStore,
    ItemStore,
    CronStore,
)

__all__ = [
    "CAPABILITIES",
    "ActivityStore",
    "AssistantStore",
    "CronStore",
    "EffectStore",
    "EventStore",
    "ItemStore",
    "LangGraphStore",
    "LifecycleStore",
    "Notifying",
    "OutboxStore",
    "RunStore",
    "SecretStore",
    "ThreadStore",
    "WaitStore",
]
