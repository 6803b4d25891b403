"""Starting a LangGraph run: the same acceptance as ``/v1`` (model check,
``runtime.accept.new_run``, limits, idempotency key, principal, one transaction; the
budget is the operator's defaults, as a LangGraph request names none), with LangGraph's
choices on top: the assistant, the thread (``if_not_exists``), what an active run of the
thread becomes (``multitask_strategy``), and whether the request is a resume.

A resume (``command.resume``) on a thread whose run asks for something does not start a
run: it answers that run's waits, through the same exactly-once update as ``POST
/v1/runs/{id}/input``, and opens the LangGraph run that continues its log.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import uuid
from typing import Any

from outlast.api.context import AppContext
from outlast.api.lg import assistant_authz, webhook
from outlast.api.lg.access import (
    BadRequest,
    Conflict,
    Found,
    Unprocessable,
    find_thread,
    found,
)
from outlast.api.lg.assistants import resolve_assistant
from outlast.api.lg.schemas import UNSUPPORTED_MODES, RunCreate
from outlast.api.schemas import check_config
from outlast.errors import ThreadNotFound
from outlast.runtime.accept import RunRequest
from outlast.runtime.options import KEPT_MODES
from outlast.service.admission import check_size
from outlast.service.placement import LangGraphRun
from outlast.store import Assistant, LgRun, Wait

_LOOKS_LIKE_ID = re.compile(r"^[0-9a-f]{32}$")
SUPERSEDED = "superseded: new input on an interrupted thread discarded its pending interrupt"
# Keys of configurable that name where a run starts, not how it runs: the thread is the
# request's, a checkpoint is a fork (RemoteGraph forwards its own config).
_POSITION_KEYS = ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map")


async def start(
    ctx: AppContext,
    thread_id: str | None,
    body: RunCreate,
    key: str | None,
    streamed: bool = False,
) -> Found:
    """Accept a run (or, for ``command.resume``, answer the thread's waits). A
    stateless run (``thread_id`` None) gets a new thread, made with the run (its id
    is not part of the idempotency fingerprint: a retry gets the same run and thread).
    ``streamed``: the response streams the run (its modes are kept in the log)."""
    assistant = await checked(ctx, body)
    if ctx.authz.active:  # threads.create_run, asked once, before the thread is looked at
        body = body.model_copy(update={"metadata": await _authorized(ctx, thread_id, body)})
    modes = _modes(body)
    config = dict(body.config or {})
    configurable = dict(config.get("configurable") or {})
    if thread_id is None and body.resumes():
        raise BadRequest("You must provide a thread_id when resuming.")
    if thread_id is not None:
        made_with = (body.metadata or {}) if ctx.authz.active else {}
        await _thread_for_run(ctx, thread_id, body.if_not_exists, made_with)
    now = dt.datetime.now(dt.UTC)
    draft = LgRun(
        id=str(uuid.uuid4()),
        run_id="",
        thread_id=thread_id or "",
        principal=ctx.principal,
        assistant_id=assistant.assistant_id,
        from_seq=0,
        kwargs=_kwargs(body, modes),
        metadata=body.metadata or {},
        multitask_strategy=body.multitask_strategy,
        created_at=now,
        idempotency_key=key,
    )
    if thread_id is not None and body.resumes():
        resumed = await _resume(ctx, thread_id, body, draft)
        if resumed is not None:
            return resumed
    options = _options(body, modes, streamed, now, configurable)
    configurable = {**ctx.http.configurable, **configurable}  # the body's own win
    return await _accepted(
        ctx, body, key, draft, _request(body, assistant, config, configurable, options, thread_id)
    )


async def checked(ctx: AppContext, body: RunCreate) -> Assistant:
    """What a run request must pass whatever thread it goes to, refused as its acceptance
    refuses it: its stream modes, ``configurable`` or ``context`` (not both), its
    assistant (``assistants.read`` must let the caller see it), the size of its input,
    the config merged with the assistant's, the ``webhook`` URL. A cron checks so the
    request its runs will be made from when it is made (api/lg/crons.py)."""
    _modes(body)
    config = dict(body.config or {})
    configurable = dict(config.get("configurable") or {})
    if configurable and body.context:
        raise BadRequest(
            "Cannot specify both configurable and context. Prefer setting context alone."
        )
    assistant = await resolve_assistant(ctx, body.assistant_id)
    await assistant_authz.runnable(ctx, assistant, body.assistant_id)
    check_size(body.input, ctx.settings.max_input_bytes, "input", "max_input_bytes")
    _request(body, assistant, config, configurable, {}, None)  # the merged config's checks
    if body.webhook:
        webhook.subscription(ctx.settings, body.webhook, "")
    return assistant


def _modes(body: RunCreate) -> list[str]:
    try:
        modes = body.modes()
    except ValueError as exc:
        raise Unprocessable(str(exc)) from None
    if set(modes) & UNSUPPORTED_MODES:
        raise Unprocessable(
            f"stream_mode {sorted(set(modes) & UNSUPPORTED_MODES)} is not supported"
        )
    return modes


def _options(
    body: RunCreate,
    modes: list[str],
    streamed: bool,
    now: dt.datetime,
    configurable: dict[str, Any],
) -> dict[str, Any]:
    """What the request sets for the execution (``runtime/options.py``). Takes the keys
    that name where a run starts out of ``configurable``: a fork, not a setting."""
    fork = body.checkpoint_id or (body.checkpoint.checkpoint_id if body.checkpoint else None)
    fork = fork or configurable.get("checkpoint_id")
    for name in _POSITION_KEYS:
        configurable.pop(name, None)
    return {
        # what a stream will read: a /wait or a create that names no mode reads the
        # result, not the log (a later join still has updates, messages and custom)
        "keep": sorted(set(modes) & KEPT_MODES)
        if streamed or "stream_mode" in body.model_fields_set
        else [],
        "subgraphs": body.stream_subgraphs,
        "interrupt_before": body.interrupt_before,
        "interrupt_after": body.interrupt_after,
        "durability": _durability(body),
        "checkpoint_id": fork,
        "command": body.command.model_dump(exclude_unset=True) if body.command else None,
        "not_before": (now + dt.timedelta(seconds=body.after_seconds)).isoformat()
        if body.after_seconds
        else None,
    }


def _request(
    body: RunCreate,
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
        check_config(merged)
    except ValueError as exc:
        raise Unprocessable(f"config: {exc}") from None
    context = {**assistant.context, **(body.context or {})}
    options = {**options, "context": context or None}
    return RunRequest(
        graph=assistant.graph_id,
        input=body.input,
        thread_id=thread_id,  # None: the service makes one (outside the fingerprint)
        config=merged,
        metadata=body.metadata,
        options={k: v for k, v in options.items() if v not in (None, [], False)},
    )


async def _accepted(
    ctx: AppContext, body: RunCreate, key: str | None, draft: LgRun, request: RunRequest
) -> Found:
    url = body.webhook if ctx.http.webhooks else None  # langgraph.json disable_webhooks
    made = await ctx.runs.accept(
        request,
        key=key,
        placement=LangGraphRun(
            draft,
            body.multitask_strategy,
            SUPERSEDED,
            temporary=request.thread_id is None and body.on_completion == "delete",
        ),
        hooks=(lambda run_id: [webhook.subscription(ctx.settings, url, run_id)]) if url else None,
    )
    assert made.lg is not None
    if made.created:  # a new run is its own only stretch, and asks nothing yet
        return Found(made.lg, made.run, latest=True)
    return await found(ctx, made.lg, made.run)


def _durability(body: RunCreate) -> str | None:
    if body.durability is not None:
        return body.durability
    if body.checkpoint_during is not None:
        return "async" if body.checkpoint_during else "exit"
    return None  # outlast's default: a checkpoint after every step (sync)


def _kwargs(body: RunCreate, modes: list[str]) -> dict[str, Any]:
    """The Run's ``kwargs`` as LangGraph's clients read them back."""
    return {
        "input": body.input,
        "command": body.command.model_dump(exclude_unset=True) if body.command else None,
        "config": body.config or {},
        "context": body.context or {},
        "stream_mode": modes,
        "interrupt_before": body.interrupt_before,
        "interrupt_after": body.interrupt_after,
        "webhook": body.webhook,
        "feedback_keys": body.feedback_keys,
        "temporary": False,
        "subgraphs": body.stream_subgraphs,
        "resumable": True,  # every outlast run is: its log is durable
        "durability": _durability(body) or "sync",
    }


async def _authorized(ctx: AppContext, thread_id: str | None, body: RunCreate) -> dict[str, Any]:
    """The app's ``threads.create_run`` handler on LangGraph's ``RunsCreate``: the run's
    metadata as it stamped it (a thread its filter leaves out is not found)."""
    asked = {
        "assistant_id": body.assistant_id,
        "metadata": body.metadata,
        "multitask_strategy": body.multitask_strategy,
        "if_not_exists": body.if_not_exists,
        "after_seconds": body.after_seconds,
        "kwargs": _kwargs(body, body.modes()),
    }
    return await ctx.runs.authorize_run(thread_id, asked)


async def _thread_for_run(
    ctx: AppContext, thread_id: str, if_not_exists: str, metadata: dict[str, Any]
) -> None:
    """The run's thread, made with ``metadata`` if it does not exist and may be made (the
    app's handler was asked already, ``_authorized``)."""
    thread = await find_thread(ctx, thread_id, None)
    if thread is not None:
        return
    if if_not_exists != "create":
        raise ThreadNotFound("Thread or assistant not found.")
    _, created = await ctx.store.lg_create_thread(thread_id, ctx.principal, metadata)
    if not created and await find_thread(ctx, thread_id, None) is None:
        # another principal's thread: refused without saying whose or what it holds
        raise Unprocessable(f"thread_id {thread_id!r} cannot be used; choose another")


async def _resume(ctx: AppContext, thread_id: str, body: RunCreate, draft: LgRun) -> Found | None:
    """Route ``command.resume`` into the waits of the thread's run that asks for
    something. ``None`` when nothing is pending and the client did not ask for
    ``strict_resume``: then it is an ordinary run with ``Command(resume=…)``, as
    LangGraph's server does (and nothing happens)."""
    assert body.command is not None
    pending = await ctx.runs.to_resume(thread_id, strict=body.strict_resume)
    if pending is None:
        return None
    latest, waits = pending
    answers = _answers(body.command.resume, waits, body.strict_resume)
    if any(w.kind == "auth" for w in waits if w.id in answers):
        # a credential goes to the run through its wait row, never into a record that
        # clients read back (the Run's kwargs), as wait.ended redacts it on /v1
        command = {**(draft.kwargs.get("command") or {}), "resume": "(redacted)"}
        draft = dataclasses.replace(draft, kwargs={**draft.kwargs, "command": command})
    # made before the answer: the run may end as soon as it is answered
    hook = webhook.subscription(ctx.settings, body.webhook, draft.id) if body.webhook else None
    lg, run = await ctx.runs.resume(
        latest, answers, draft, hook, update=body.command.update, goto=body.command.goto
    )
    return await found(ctx, lg, run)


def _answers(resume: Any, waits: list[Wait], strict: bool) -> dict[str, Any]:
    """Which wait each part of ``resume`` answers: a map keyed by interrupt id, or one
    value when exactly one interrupt is pending."""
    by_interrupt = {w.interrupt_id: w for w in waits}
    if isinstance(resume, dict) and resume and any(k in by_interrupt for k in resume):
        unknown = sorted(k for k in resume if k not in by_interrupt)
        if unknown and strict:
            raise Conflict(
                f"resume names interrupts that are not pending: {unknown}; "
                f"pending: {sorted(by_interrupt)}"
            )
        return {by_interrupt[k].id: v for k, v in resume.items() if k in by_interrupt}
    if (
        strict
        and isinstance(resume, dict)
        and resume
        and all(_LOOKS_LIKE_ID.match(k) for k in resume)
    ):
        raise Conflict(
            f"resume names interrupts that are not pending: {sorted(resume)}; "
            f"pending: {sorted(by_interrupt)}"
        )
    if len(waits) == 1:
        return {waits[0].id: resume}
    raise Conflict(
        "When there are multiple pending interrupts, you must specify the interrupt id "
        f"when resuming. Pending: {sorted(by_interrupt)}"
    )
