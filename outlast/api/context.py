"""What the routes share: the store, the graphs, the settings, the embedded worker, and the
run and thread services bound to the calling principal."""

from __future__ import annotations

from dataclasses import dataclass, field

from outlast.api.run_headers import NO_HEADERS, RunHttp
from outlast.config import Settings
from outlast.graph.registry import GraphRegistry
from outlast.runtime.worker import Worker
from outlast.service import RunService
from outlast.service.assistants import AssistantService
from outlast.service.authz import NOBODY, Authz
from outlast.service.crons import CronService
from outlast.service.threads import ThreadService
from outlast.store import Store


@dataclass(frozen=True, slots=True)
class AppContext:
    store: Store
    registry: GraphRegistry
    settings: Settings
    worker: Worker | None
    # Who is calling (set per request from the API key, or the identity the app's
    # auth.py gave; "" without either).
    principal: str = ""
    # langgraph.json http: the headers of this request its runs get in their configurable,
    # and whether their webhooks are sent (api/run_headers.py)
    http: RunHttp = NO_HEADERS
    # Open event streams per principal, in this process (the SSE connection limit).
    streams: dict[str, int] = field(default_factory=dict)
    # The app's @auth.on handlers, asked for this caller (service/authz.py).
    authz: Authz = NOBODY

    @property
    def runs(self) -> RunService:
        """The run service, as this request's principal sees it (a few fields: cheap)."""
        return RunService(
            self.store, self.registry, self.settings, self.worker, self.principal, self.authz
        )

    @property
    def threads(self) -> ThreadService:
        """The thread service, as this request's principal sees it (a few fields: cheap)."""
        return ThreadService(self.store, self.registry, self.principal, self.authz)

    @property
    def assistants(self) -> AssistantService:
        """The assistant service, as this request's principal sees it."""
        return AssistantService(self.store, self.registry, self.principal, self.authz)

    @property
    def crons(self) -> CronService:
        """The cron service, as this request's principal sees it."""
        return CronService(self.store, self.registry, self.principal, self.authz)
