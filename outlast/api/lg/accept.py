"""Starting a LangGraph run on the LangGraph face: the run service's acceptance
(``service/launch.py``: the assistant, the thread, the multitask strategy, limits,
idempotency, or the exactly-once resume of ``command.resume``), given the face's body
and answered as the face reads a run (``Found``). Protocol v2 calls the service itself.
"""

from __future__ import annotations

from outlast.api.context import AppContext
from outlast.api.lg.access import Found, found
from outlast.api.lgshared import RunCreate, launcher
from outlast.store import Assistant


async def start(
    ctx: AppContext,
    thread_id: str | None,
    body: RunCreate,
    key: str | None,
    streamed: bool = False,
) -> Found:
    """Accept a run (or, for ``command.resume``, answer the thread's waits);
    ``thread_id`` None: a stateless run, on a thread made with it. ``streamed``: the
    response streams the run (its modes are kept in the log)."""
    return (await started(ctx, thread_id, body, key, streamed))[0]


async def started(
    ctx: AppContext,
    thread_id: str | None,
    body: RunCreate,
    key: str | None,
    streamed: bool = False,
) -> tuple[Found, bool]:
    """``start``, and whether the request made the LangGraph run: a new run, or a
    resume's new stretch (with an ``Idempotency-Key`` a resume's stretch cannot be told
    from a retry's, which made none: it counts as not made)."""
    made = await launcher(ctx).start(thread_id, body.launch_request(), key, streamed=streamed)
    if made.created:  # a new run is its own only stretch, and asks nothing yet
        return Found(made.lg, made.run, latest=True), True
    return await found(ctx, made.lg, made.run), key is None


async def checked(ctx: AppContext, body: RunCreate) -> Assistant:
    """What a run request must pass whatever thread it goes to (its assistant, returned),
    refused as its acceptance refuses it. A cron checks so the request its runs will be
    made from when it is made (api/lg/crons.py)."""
    return await launcher(ctx).checked(body.launch_request())
