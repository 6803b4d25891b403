"""What ``langgraph.json``'s ``http`` section changes in the runs a request makes:
the request's headers copied into the run's ``config["configurable"]``
(``configurable_headers``), and whether a run's ``webhook`` is sent (``disable_webhooks``).

Headers are picked by name, lower-cased, with ``*`` as the only wildcard (LangGraph's
patterns: no other regex); ``excludes`` win over ``includes``. Credentials are never
copied, whatever the patterns say: a run's config is stored with the run and its
checkpoints, and outlast's API keys (``authorization``, ``x-api-key``) must not be; nor
are the headers LangGraph's server leaves out by default (``x-tenant-id``,
``x-service-key``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from outlast.graph.manifest import HeaderSelection, HttpSection, Manifest

NEVER = ("authorization", "x-api-key", "x-tenant-id", "x-service-key", "cookie")


def _pattern(globs: Iterable[str]) -> re.Pattern[str] | None:
    parts = [re.escape(g.lower()).replace(r"\*", ".*") for g in globs]
    return re.compile("^(?:" + "|".join(parts) + ")$") if parts else None


@dataclass(frozen=True, slots=True)
class RunHttp:
    includes: re.Pattern[str] | None = None
    excludes: re.Pattern[str] | None = None
    webhooks: bool = True
    # this request's headers picked for its runs' configurable (set per request)
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, selection: HeaderSelection | None, webhooks: bool = True) -> RunHttp:
        if selection is None:
            return cls(webhooks=webhooks)
        return cls(
            _pattern(selection.includes or ()),
            _pattern([*NEVER, *(selection.excludes or ())]),
            webhooks,
        )

    @classmethod
    def of_manifest(cls, manifest: Manifest) -> RunHttp:
        http = manifest.http or HttpSection()
        return cls.of(http.configurable_headers, webhooks=not http.disable_webhooks)

    def bound(self, headers: Mapping[str, str]) -> RunHttp:
        """This, with the request's ``headers`` picked (the first value of a repeated one)."""
        if self.includes is None:
            return self
        picked: dict[str, str] = {}
        for name, value in headers.items():
            name = name.lower()
            if name in picked or not self.includes.match(name):
                continue
            if self.excludes is not None and self.excludes.match(name):
                continue
            picked[name] = value
        return replace(self, headers=tuple(picked.items()))

    @property
    def configurable(self) -> dict[str, str]:
        return dict(self.headers)


NO_HEADERS = RunHttp()
