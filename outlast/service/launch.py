"""Starting a LangGraph run, for every face that starts one (the LangGraph face's run
routes, protocol v2's ``run.start`` / ``input.respond`` / ``state.fork``, a cron's tick):
the same acceptance as ``/v1`` (model check, ``runtime.accept.new_run``, limits,
idempotency key, principal, one transaction; the budget is the operator's defaults, as a
LangGraph request names none), with LangGraph's choices on top: the assistant, the thread
(``if_not_exists``), what an active run of the thread becomes (``multitask_strategy``),
and whether the request is a resume.

A resume (``command.resume``) on a thread whose run asks for something does not start a
run: it answers that run's waits (``answers.resumed_waits``), through the same
exactly-once update as ``POST /v1/runs/{id}/input``, and opens the LangGraph run that
continues its log.

The request comes as ``LaunchRequest``, which each face builds from its own pydantic body
(``api/lgshared.py:RunCreate``); refusals are ``OutlastError``s, with LangGraph's server's
own messages and statuses.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from outlast.config import Settings
from outlast.errors import MalformedRequest, ThreadNotFound, UnprocessableRequest
from outlast.runtime.accept import RunRequest
from outlast.runtime.options import KEPT_MODES
from outlast.service.admission import check_size
from outlast.service.answers import resumed_waits
from outlast.service.assistants import AssistantService
from outlast.service.owners import unavailable
from outlast.service.placement import LangGraphRun
from outlast.service.runs import RunService
from outlast.store import Assistant, LgRun, Run
from outlast.store.outbox import NewWebhook
from outlast.vocabulary import ANSWERABLE_KINDS, EventType
from outlast.webhooks.urls import UnsafeUrl, check_url

# Every mode the legacy run endpoints accept (§A.4); `tools` and `lifecycle` are v2 only.
STREAM_MODES = frozenset(
    {
        "values",
        "messages",
        "messages-tuple",
        "updates",
        "events",
        "debug",
        "tasks",
        "checkpoints",
        "custom",
    }
)
UNSUPPORTED_MODES: frozenset[str] = frozenset()

SUPERSEDED = "superseded: new input on an interrupted thread discarded its pending interrupt"
# Keys of configurable that name where a run starts, not how it runs: the thread is the
# request's, a checkpoint is a fork (RemoteGraph forwards its own config).
_POSITION_KEYS = ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map")

# LangGraph's per-run ``webhook`` (the body it posts is the face's: ``api/lg/webhook.py``).
WEBHOOK_FORMAT = "langgraph"
WEBHOOK_ENDS = (
    EventType.RUN_WAITING,
    EventType.RUN_COMPLETED,
    EventType.RUN_FAILED,
    EventType.RUN_CANCELLED,
)

Strategy = Literal["reject", "interrupt", "rollback", "enqueue"]
Durability = Literal["sync", "async", "exit"]
Interrupts = Literal["*"] | list[str] | None
# A face's check of a run's merged config (LangGraph's ``RunConfig``): raises ValueError
# with what is wrong.
ConfigCheck = Callable[[dict[str, Any]], None]


def stream_modes(stream_mode: str | Sequence[str]) -> list[str]:
    """The requested modes, in order, once each; an empty list (useStream sends one)
    means ``values``. ValueError for a mode LangGraph does not have."""
    raw = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
    modes = list(dict.fromkeys(raw)) or ["values"]
    unknown = [m for m in modes if m not in STREAM_MODES]
    if unknown:
        raise ValueError(f"unknown stream_mode {unknown}; allowed: {sorted(STREAM_MODES)}")
    return modes


def webhook_subscription(settings: Settings, url: str, lg_run_id: str) -> NewWebhook:
    """A LangGraph run's ``webhook``: one POST when the LangGraph run ends (it completes,
    fails, is cancelled, or stops to ask a client something), ``once``: a resume is a new
    LangGraph run with a subscription of its own. Its run and principal are set where the
    run is made; ``UnprocessableRequest`` for a URL outlast does not send to."""
    try:
        check_url(url, allow_private=settings.webhook_allow_private)
    except UnsafeUrl as exc:
        raise UnprocessableRequest(f"webhook: {exc}") from None
    return NewWebhook(
        url=url,
        events=WEBHOOK_ENDS,
        format=WEBHOOK_FORMAT,
        extra={"lg_run_id": lg_run_id},
        once=True,
        wait_kinds=tuple(sorted(ANSWERABLE_KINDS)),
    )


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """A LangGraph run request (LangGraph's ``RunCreate``), checked at the face's edge for
    its types and for what the store cannot keep."""

    assistant_id: str
    input: dict[str, Any] | list[Any] | None = None
    # LangGraph's ``Command`` as the client sent it: only the keys it gave (resume,
    # update, goto); a given ``resume`` makes the request a resume
    command: dict[str, Any] | None = None
    stream_mode: str | Sequence[str] = ("values",)
    stream_mode_given: bool = False  # named by the client, not the default
    stream_subgraphs: bool = False
    config: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    checkpoint_id: str | None = None  # a fork: the checkpoint the run starts from
    checkpoint_during: bool | None = None
    durability: Durability | None = None
    interrupt_before: Interrupts = None
    interrupt_after: Interrupts = None
    multitask_strategy: Strategy = "enqueue"
    if_not_exists: Literal["reject", "create"] = "reject"
    on_completion: Literal["delete", "keep"] = "delete"
    after_seconds: float | None = None
    strict_resume: bool = False
    webhook: str | None = None
    feedback_keys: list[str] | None = None

    @property
    def resumes(self) -> bool:
        return self.command is not None and "resume" in self.command


@dataclass(frozen=True, slots=True)
class Launched:
    """The LangGraph run a request made (or, for an idempotent retry, made before), and the
    outlast run it is a stretch of."""

    lg: LgRun
    run: Run
    created: bool  # a new run: its own only stretch, and it asks nothing yet


@dataclass(frozen=True, slots=True)
class Launcher:
    """LangGraph run starts, for the caller ``runs`` is bound to. ``check_config``: the
    face's check of a config (a pydantic model, at the edge); ``headers``: the request's
    headers a run gets in its ``configurable`` (langgraph.json ``configurable_headers``);
    ``webhooks``: whether a run's ``webhook`` is sent (``disable_webhooks``)."""

    runs: RunService
    check_config: ConfigCheck
    headers: Mapping[str, str] = field(default_factory=dict)
    webhooks: bool = True

    async def start(
        self,
        thread_id: str | None,
        asked: LaunchRequest,
        key: str | None,
        *,
        streamed: bool = False,
    ) -> Launched:
        """Accept a run (or, for ``command.resume``, answer the thread's waits). A
        stateless run (``thread_id`` None) gets a new thread, made with the run (its id
        is not part of the idempotency fingerprint: a retry gets the same run and
        thread). ``streamed``: the response streams the run (its modes are kept in the
        log)."""
        runs = self.runs
        assistant = await self.checked(asked)
        if runs.authz.active:  # threads.create_run, asked once, before the thread is looked at
            asked = dataclasses.replace(asked, metadata=await self._authorized(thread_id, asked))
        modes = _modes(asked)
        config = dict(asked.config or {})
        configurable = dict(config.get("configurable") or {})
        if thread_id is None and asked.resumes:
            raise MalformedRequest("You must provide a thread_id when resuming.")
        if thread_id is not None:
            made_with = (asked.metadata or {}) if runs.authz.active else {}
            await self._thread_for_run(thread_id, asked.if_not_exists, made_with)
        now = dt.datetime.now(dt.UTC)
        draft = LgRun(
            id=str(uuid.uuid4()),
            run_id="",
            thread_id=thread_id or "",
            principal=runs.principal,
            assistant_id=assistant.assistant_id,
            from_seq=0,
            kwargs=_kwargs(asked, modes),
            metadata=asked.metadata or {},
            multitask_strategy=asked.multitask_strategy,
            created_at=now,
            idempotency_key=key,
        )
        if thread_id is not None and asked.resumes:
            resumed = await self._resume(thread_id, asked, draft)
            if resumed is not None:
                return resumed
        options = _options(asked, modes, streamed, now, configurable)
        configurable = {**self.headers, **configurable}  # the body's own win
        request = self._request(asked, assistant, config, configurable, options, thread_id)
        return await self._accepted(asked, key, draft, request)

    async def checked(self, asked: LaunchRequest) -> Assistant:
        """What a run request must pass whatever thread it goes to, refused as its
        acceptance refuses it: its stream modes, ``configurable`` or ``context`` (not
        both), its assistant (``assistants.read`` must let the caller see it), the size
        of its input, the config merged with the assistant's, the ``webhook`` URL. A cron
        checks so the request its runs will be made from when it is made."""
        _modes(asked)
        config = dict(asked.config or {})
        configurable = dict(config.get("configurable") or {})
        if configurable and asked.context:
            raise MalformedRequest(
                "Cannot specify both configurable and context. Prefer setting context alone."
            )
        runs = self.runs
        assistants = AssistantService(runs.store, runs.registry, runs.principal, runs.authz)
        assistant = await assistants.resolve(asked.assistant_id)
        await assistants.runnable(assistant, asked.assistant_id)
        check_size(asked.input, runs.settings.max_input_bytes, "input", "max_input_bytes")
        self._request(asked, assistant, config, configurable, {}, None)  # the merged config
        if asked.webhook:
            webhook_subscription(runs.settings, asked.webhook, "")
        return assistant

    def _request(
        self,
        asked: LaunchRequest,
        assistant: Assistant,
        config: dict[str, Any],
        configurable: dict[str, Any],
        options: dict[str, Any],
        thread_id: str | None,
    ) -> RunRequest:
        """The run in the run service's terms: the assistant's config and context under the
        request's."""
        merged = {**assistant.config, **config}
        merged["configurable"] = {**(assistant.config.get("configurable") or {}), **configurable}
        try:
            self.check_config(merged)
        except ValueError as exc:
            raise UnprocessableRequest(f"config: {exc}") from None
        context = {**assistant.context, **(asked.context or {})}
        options = {**options, "context": context or None}
        return RunRequest(
            graph=assistant.graph_id,
            input=asked.input,
            thread_id=thread_id,  # None: the service makes one (outside the fingerprint)
            config=merged,
            metadata=asked.metadata,
            options={k: v for k, v in options.items() if v not in (None, [], False)},
        )

    async def _accepted(
        self, asked: LaunchRequest, key: str | None, draft: LgRun, request: RunRequest
    ) -> Launched:
        settings = self.runs.settings
        url = asked.webhook if self.webhooks else None  # langgraph.json disable_webhooks
        made = await self.runs.accept(
            request,
            key=key,
            placement=LangGraphRun(
                draft,
                asked.multitask_strategy,
                SUPERSEDED,
                temporary=request.thread_id is None and asked.on_completion == "delete",
            ),
            hooks=(lambda run_id: [webhook_subscription(settings, url, run_id)]) if url else None,
        )
        assert made.lg is not None
        return Launched(made.lg, made.run, made.created)

    async def _authorized(self, thread_id: str | None, asked: LaunchRequest) -> dict[str, Any]:
        """The app's ``threads.create_run`` handler on LangGraph's ``RunsCreate``: the run's
        metadata as it stamped it (a thread its filter leaves out is not found)."""
        value = {
            "assistant_id": asked.assistant_id,
            "metadata": asked.metadata,
            "multitask_strategy": asked.multitask_strategy,
            "if_not_exists": asked.if_not_exists,
            "after_seconds": asked.after_seconds,
            "kwargs": _kwargs(asked, stream_modes(asked.stream_mode)),
        }
        return await self.runs.authorize_run(thread_id, value)

    async def _thread_for_run(
        self, thread_id: str, if_not_exists: str, metadata: dict[str, Any]
    ) -> None:
        """The run's thread, made with ``metadata`` if it does not exist and may be made
        (the app's handler was asked already, ``_authorized``)."""
        owners = self.runs.owners
        thread = await owners.thread(thread_id, None)
        if thread is not None:
            return
        if if_not_exists != "create":
            raise ThreadNotFound("Thread or assistant not found.")
        _, created = await self.runs.store.lg_create_thread(
            thread_id, self.runs.principal, metadata
        )
        if not created and await owners.thread(thread_id, None) is None:
            # another principal's thread: refused without saying whose or what it holds
            raise unavailable(thread_id)

    async def _resume(self, thread_id: str, asked: LaunchRequest, draft: LgRun) -> Launched | None:
        """Route ``command.resume`` into the waits of the thread's run that asks for
        something. ``None`` when nothing is pending and the client did not ask for
        ``strict_resume``: then it is an ordinary run with ``Command(resume=…)``, as
        LangGraph's server does (and nothing happens)."""
        command = asked.command or {}
        pending = await self.runs.to_resume(thread_id, strict=asked.strict_resume)
        if pending is None:
            return None
        latest, waits = pending
        answers = resumed_waits(command.get("resume"), waits, asked.strict_resume)
        if any(w.kind == "auth" for w in waits if w.id in answers):
            # a credential goes to the run through its wait row, never into a record that
            # clients read back (the Run's kwargs), as wait.ended redacts it on /v1
            redacted = {**(draft.kwargs.get("command") or {}), "resume": "(redacted)"}
            draft = dataclasses.replace(draft, kwargs={**draft.kwargs, "command": redacted})
        # made before the answer: the run may end as soon as it is answered
        settings = self.runs.settings
        hook = webhook_subscription(settings, asked.webhook, draft.id) if asked.webhook else None
        lg, run = await self.runs.resume(
            latest, answers, draft, hook, update=command.get("update"), goto=command.get("goto")
        )
        return Launched(lg, run, created=False)


def _modes(asked: LaunchRequest) -> list[str]:
    try:
        modes = stream_modes(asked.stream_mode)
    except ValueError as exc:
        raise UnprocessableRequest(str(exc)) from None
    if set(modes) & UNSUPPORTED_MODES:
        raise UnprocessableRequest(
            f"stream_mode {sorted(set(modes) & UNSUPPORTED_MODES)} is not supported"
        )
    return modes


def _options(
    asked: LaunchRequest,
    modes: list[str],
    streamed: bool,
    now: dt.datetime,
    configurable: dict[str, Any],
) -> dict[str, Any]:
    """What the request sets for the execution (``runtime/options.py``). Takes the keys
    that name where a run starts out of ``configurable``: a fork, not a setting."""
    fork = asked.checkpoint_id or configurable.get("checkpoint_id")
    for name in _POSITION_KEYS:
        configurable.pop(name, None)
    return {
        # what a stream will read: a /wait or a create that names no mode reads the
        # result, not the log (a later join still has updates, messages and custom)
        "keep": sorted(set(modes) & KEPT_MODES) if streamed or asked.stream_mode_given else [],
        "subgraphs": asked.stream_subgraphs,
        "interrupt_before": asked.interrupt_before,
        "interrupt_after": asked.interrupt_after,
        "durability": _durability(asked),
        "checkpoint_id": fork,
        "command": _command(asked),
        "not_before": (now + dt.timedelta(seconds=asked.after_seconds)).isoformat()
        if asked.after_seconds
        else None,
    }


def _command(asked: LaunchRequest) -> dict[str, Any] | None:
    return None if asked.command is None else dict(asked.command)


def _durability(asked: LaunchRequest) -> str | None:
    if asked.durability is not None:
        return asked.durability
    if asked.checkpoint_during is not None:
        return "async" if asked.checkpoint_during else "exit"
    return None  # outlast's default: a checkpoint after every step (sync)


def _kwargs(asked: LaunchRequest, modes: list[str]) -> dict[str, Any]:
    """The Run's ``kwargs`` as LangGraph's clients read them back."""
    return {
        "input": asked.input,
        "command": _command(asked),
        "config": asked.config or {},
        "context": asked.context or {},
        "stream_mode": modes,
        "interrupt_before": asked.interrupt_before,
        "interrupt_after": asked.interrupt_after,
        "webhook": asked.webhook,
        "feedback_keys": asked.feedback_keys,
        "temporary": False,
        "subgraphs": asked.stream_subgraphs,
        "resumable": True,  # every outlast run is: its log is durable
        "durability": _durability(asked) or "sync",
    }
