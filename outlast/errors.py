"""Errors that say whether retrying can help.

Each error carries ``retryable``: a caller (a worker loop, an HTTP client, an operator)
can decide what to do without parsing messages. The API answers them with their
``status`` (``api/problems.py``): an RFC 9457 problem on ``/v1``, ``{"detail": …}`` on the
LangGraph face.
"""

from __future__ import annotations

import enum
from typing import ClassVar


class OutlastError(Exception):
    """Base class. ``status`` is the HTTP status the API answers with."""

    retryable: ClassVar[bool] = False
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"


class Fault(enum.Enum):
    """What an error means to a client, for faces without HTTP statuses (A2A's and MCP's
    JSON-RPC errors), decided here once so no face says "not found" for an outage."""

    RETRY = "retry"  # the same call may succeed later (an outage, a limit)
    NOT_FOUND = "not_found"  # nothing of that id exists for the caller
    INVALID = "invalid"  # the caller's request, refused as it is
    INTERNAL = "internal"  # outlast's own failure


def fault_of(exc: OutlastError) -> Fault:
    if exc.retryable:
        return Fault.RETRY
    if exc.status == 404:
        return Fault.NOT_FOUND
    return Fault.INVALID if exc.status < 500 else Fault.INTERNAL


class RunNotFound(OutlastError):
    status = 404
    title = "Run not found"


class ThreadNotFound(OutlastError):
    status = 404
    title = "Thread not found"


class UnknownGraph(OutlastError):
    status = 422
    title = "Unknown graph"


class IdempotencyKeyReused(OutlastError):
    """The same Idempotency-Key came with another request body; nothing was created."""

    status = 422
    title = "Idempotency key reused with a different request"


class InvalidCursor(OutlastError):
    status = 400
    title = "Invalid event cursor"


class LeaseLost(OutlastError):
    """This worker no longer holds the run: another worker (or the reaper) took it over.

    Not retryable by the worker that sees it: the work now belongs to someone else, and
    every write this worker attempts for the run is refused by the epoch fence.
    """

    status = 409
    title = "Lease lost"

    @classmethod
    def of(cls, run_id: str, epoch: int) -> LeaseLost:
        """The refusal of a fenced write: this epoch of the run's lease is gone."""
        return cls(f"run {run_id}: lease epoch {epoch} is no longer held")


class StoreUnavailable(OutlastError):
    """The database could not be reached; the same call may succeed later."""

    retryable = True
    status = 503
    title = "Store unavailable"


class StoreFull(StoreUnavailable):
    """The disk that holds the store is full: the write failed whole, and the same call
    succeeds once space is freed (nothing else needs doing). A worker meets it as any
    store failure: the run stops writing and resumes from its last checkpoint."""

    title = "Store full"
    # A disk is not freed in a second: a client that honours Retry-After asks less often.
    retry_after: ClassVar[int] = 5


class GraphLoadError(OutlastError):
    """A graph named in langgraph.json (or --graph) could not be imported or built."""

    status = 500
    title = "Graph could not be loaded"


class WaitNotFound(OutlastError):
    status = 404
    title = "Wait not found"


class WaitNotOpen(OutlastError):
    """The wait was already answered (or withdrawn): a second answer never resumes twice."""

    status = 409
    title = "Wait is not open"


class InvalidAnswer(OutlastError):
    status = 422
    title = "Answer does not match the wait's schema"


class ThreadBusy(OutlastError):
    status = 409
    title = "Thread has an active run"


class NothingToResume(OutlastError):
    """A resume found nothing pending (answered already, or the run is still going)."""

    status = 409
    title = "Nothing to resume"


class WhichWait(OutlastError):
    """An answer that names no wait, to a run that asks several things at once: which
    one it answers is the client's to say, never guessed."""

    status = 409
    title = "Answer names no wait"


class LimitReached(OutlastError):
    """A per-principal limit; retrying after ``Retry-After`` may succeed."""

    retryable = True
    status = 429
    title = "Limit reached"

    def __init__(self, detail: str, limit: str, retry_after: int = 5) -> None:
        super().__init__(detail)
        self.limit = limit
        self.retry_after = retry_after


class TooLarge(OutlastError):
    status = 413
    title = "Payload too large"

    def __init__(self, detail: str, limit: str) -> None:
        super().__init__(detail)
        self.limit = limit


class ThreadUnavailable(OutlastError):
    """Another principal's thread: refused without saying whose, or what it holds."""

    status = 422
    title = "Thread unavailable"


class RunActive(OutlastError):
    """The run is queued or running: what was asked would leave its work going unseen."""

    status = 409
    title = "Run is active"


class InvalidAssistant(OutlastError):
    """A run's assistant that is neither a graph's nor one of the caller's, or an
    assistant id that is not a UUID (a name would be read as a graph name)."""

    status = 422
    title = "Invalid assistant"


class SystemAssistantReadOnly(OutlastError):
    """A graph's own assistant: derived from the configuration, never changed or deleted."""

    status = 409
    title = "System assistant"


class InvalidCron(OutlastError):
    """A cron's schedule or time zone that cannot be read, or that never fires."""

    status = 422
    title = "Invalid cron"


class ThreadExists(OutlastError):
    """A thread made with an id that is taken (``if_exists=raise``, or a thread the caller
    may not see): refused without saying whose it is."""

    status = 409
    title = "Thread exists"


class SuperstepsRefused(OutlastError):
    """A new thread's ``supersteps`` that its graph refused: the thread is not made."""

    status = 422
    title = "Supersteps refused"


class PruneRefused(OutlastError):
    """A prune the saver cannot do (``keep_latest`` on a thread whose graph uses a
    ``DeltaChannel``: its state is rebuilt from older checkpoints)."""

    status = 422
    title = "Prune refused"


class MalformedRequest(OutlastError):
    """A request that contradicts itself (a resume without a thread, both ``configurable``
    and ``context``): refused as it is, before anything is looked up."""

    status = 400
    title = "Bad request"


class UnprocessableRequest(OutlastError):
    """A well-formed request that cannot be carried out as it stands (an unknown stream
    mode, a config LangGraph would fail on, a webhook URL outlast does not send to)."""

    status = 422
    title = "Unprocessable request"
