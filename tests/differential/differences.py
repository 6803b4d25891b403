"""The one list of what outlast shows a client differently from ``langgraph dev``, each
difference with its reason. The differential tests fail on any difference not listed
here, and on any listed here that no longer occurs (so the list stays true).

- ``UNCOMPARED``: keys left out on every server: they describe the server that
  answered, not what it did.
- ``ADDITIVE``: keys outlast adds that the reference has no counterpart for; left out
  of outlast's side. Each must still occur somewhere.
- ``DIFFERENCES``: a step of a scenario that differs. ``intended``: outlast means it (its
  reason says why); ``gap``: a known shortfall of outlast, kept here until it is fixed in
  the part of the code that owns it (``owner``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

UNCOMPARED: dict[str, str] = {
    "langgraph_api_url": "the URL the reference server was reached at",
    "langgraph_api_version": "the reference server's version",
    "langgraph_host": "the reference server's deployment kind (self-hosted)",
    "langgraph_plan": "the reference server's licence plan",
    "langgraph_version": "the langgraph library version the reference reports",
    "langgraph_request_id": "the reference server's id of the HTTP request",
    "__request_start_time_ms__": "when the reference server received the request",
}

ADDITIVE: dict[str, str] = {
    "outlast_run_id": (
        "a LangGraph run's outlast run (one outlast run is several LangGraph runs after "
        "resumes): for the /v1 face and the console; clients ignore a key they do not know"
    ),
    # a stream event outlast adds: ``event:<name>``
    "event:end": (
        "a run stream says it is over: `end` ({status}) after the last event, so a client "
        "tells a finished run from a cut connection without asking the run (langgraph_sdk "
        "reads `end` as the run's end, and otherwise GETs the run to find out), and a "
        "rejoin past a finished run's last event gets `end` at once instead of an empty "
        "stream (aegra#472); the reference sends none"
    ),
}

# Normalisations of a value, on every server, each named and with its reason; each must
# still change something somewhere.
NORMALISED: dict[str, str] = {
    "invoked-id-suffix": (
        "a chat model's reply invoked plainly has the id lc_run--<run>-0, one streamed "
        "lc_run--<run>: the reference invokes a /wait's models plainly, outlast streams "
        "every run's (ARCHITECTURE.md, a run's models always stream; "
        "runs_wait_calls_the_model_plainly shows it); the rest of the reply is the same"
    ),
}

BOTH = ("sqlite", "postgres")


@dataclass(frozen=True)
class Difference:
    scenario: str
    step: str
    what: str
    why: str
    kind: Literal["intended", "gap"] = "intended"
    owner: str = ""  # for a gap: the code that would fix it
    backends: tuple[str, ...] = BOTH
    # a race: it occurs on some runs only (then it need not occur to stay listed)
    sometimes: bool = False


def _gap(
    scenario: str, step: str, what: str, owner: str, why: str = "", sometimes: bool = False
) -> Difference:
    return Difference(
        scenario, step, what, why or "not yet done", "gap", owner, sometimes=sometimes
    )


DIFFERENCES: list[Difference] = [
    # -- intended -------------------------------------------------------------------------
    Difference(
        "hitl_resume_nothing_to_resume",
        "resume idle thread",
        "Command(resume=...) on a thread that never ran: the reference fails the run "
        "(TypeError: 'NoneType' object is not iterable), outlast runs the graph",
        "on an idle thread a resume with nothing to resume is an ordinary run with "
        "Command(resume=...), which LangGraph's library runs from the start "
        "(ARCHITECTURE.md, decisions of the LangGraph face); `strict_resume` refuses it",
    ),
    *(
        Difference(
            "runs_wait_calls_the_model_plainly",
            step,
            "runs.wait: the reference invokes the model plainly ((invoked) in this fake's "
            "reply), outlast streams it",
            "a run's tokens are the evidence that its model call is alive (the activity "
            "lease the supervisor judges a slow call from a stuck one by; a plain call is "
            "silent for as long as it takes), and a join or a protocol v2 stream may show "
            "them; the reply is the same text (ARCHITECTURE.md, a run's models always "
            "stream)",
        )
        for step in ("wait", "stateless wait")
    ),
    Difference(
        "runs_cancel",
        "cancel",
        "cancel(wait=True) answers the thread's values at the run's end; the reference {}",
        "a cancel that waits answers what /join answers for the run (its final state), "
        "so a client reads where the cancelled run left the thread in one call",
    ),
    Difference(
        "runs_cancel",
        "thread",
        "the thread of a cancelled run is idle; the reference shows it interrupted",
        "a cancel is not a pause a client could resume: LangGraph's server shows the "
        "thread interrupted and clients take it for a human-in-the-loop pause "
        "(langgraphjs#2751; the status mapping in ARCHITECTURE.md)",
    ),
    Difference(
        "runs_create_then_join",
        "create: context and durability",
        "durability sync (the reference: async), resumable true (false)",
        "outlast checkpoints after every step by default (OUTLAST_DURABILITY) so a killed "
        "worker's run goes on where it was, and every run's stream is its durable log, so "
        "every run is resumable",
    ),
    Difference(
        "runs_create_then_join",
        "create: config",
        "kwargs.config is what the client sent; the reference shows the config after it "
        "added its own keys (thread_id, run_id, assistant_id, graph_id, user_id, the auth "
        "user, __after_seconds__) and the run's metadata",
        "a Run's kwargs echo the request; the graph gets those keys in its config all the "
        "same (tests/test_user_auth.py), and a client reads them from the Run's own fields",
    ),
    Difference(
        "stream_join_after_create",
        "join the finished run's stream",
        "joining a finished run's stream replays it (metadata, its values, end); the "
        "reference sends nothing",
        "a run's stream is its durable log: a client that comes late, or back after a "
        "cut, gets what it missed (every outlast run is resumable); the reference keeps "
        "a run's stream only while it runs",
    ),
    Difference(
        "threads_search_with_filters",
        "by values",
        "a values filter with a list: the reference answers 500, outlast filters "
        "(JSON containment, as Postgres' @>)",
        "the reference's in-memory search fails on it; outlast's answer is the documented "
        "containment",
    ),
    Difference(
        "threads_search_without_filters",
        "search asc",
        "sort_order=asc without sort_by: outlast sorts ascending (by updated_at), the "
        "reference ignores sort_order and lists the newest first",
        "a sort order the client asked for is honoured",
    ),
    Difference(
        "threads_prune",
        "keep latest",
        "prune(strategy=keep_latest) prunes; the reference answers 422",
        "outlast's savers can prune a thread's history to its latest checkpoints; the "
        "in-memory reference cannot",
    ),
    Difference(
        "threads_prune",
        "history after",
        "after keep_latest, one checkpoint is left (the reference kept all: it refused)",
        "the prune above happened",
    ),
    Difference(
        "errors_invalid_bodies",
        "bad thread id",
        "GET /threads/not-a-uuid is 404 (not found); the reference answers 422",
        "outlast's thread ids are any 1 to 200 of A-Z a-z 0-9 _ . : - (A2A context ids and "
        "/v1 thread ids are threads too): an id that is not a UUID is not malformed",
    ),
    # -- gaps: outlast shortfalls owned by code outside the LangGraph face's run streams ---
    _gap(
        "hitl_stream_interrupt_and_resume",
        "resume",
        "a resume's stream has no `values` events when the interrupted stretch did not "
        "ask for them: the run keeps the stream modes of its first stretch",
        "store/lgthreads.py lg_resume (+ service/launch.py): a resume should add its "
        "modes to runs.options.keep",
    ),
    _gap(
        "stream_tool_calling_agent",
        "agent",
        "the model's second reply (live tokens) reaches the client before the tools "
        "node's update and message (log events whose write was in flight)",
        "runtime/live.py + api/lg/tokens.py: a live chunk may overtake an event put on "
        "the log before it (tokens.py, module docstring); holding it needs the log's "
        "position at the chunk's making",
        sometimes=True,
    ),
    _gap(
        "stream_messages_legacy",
        "agent",
        "the same overtaking as stream_tool_calling_agent, in the legacy messages mode",
        "runtime/live.py + api/lg/tokens.py",
        sometimes=True,
    ),
    _gap(
        "js_sdk_client",
        "agent stream",
        "the same overtaking, through the JS SDK: the run's first `values` (its input) "
        "reaches the client after the model's first chunk",
        "runtime/live.py + api/lg/tokens.py",
        sometimes=True,
    ),
    _gap(
        "stream_messages_tuple_of_a_model",
        "metadata keys",
        "a message event's metadata has the run's ids, graph_id and node only; the "
        "reference's also has the run's metadata (created_by, owner, run_attempt), the "
        "step (langgraph_step, _path, _triggers, the task's checkpoint_ns) and the model's "
        "(ls_provider, ls_model_type, ls_integration, lc_versions)",
        "runtime/translate.py (the log's message.delta keeps node and namespace only) + "
        "api/lg/wire.py",
    ),
    _gap(
        "stream_events",
        "events",
        "events mode: the root run is named LangGraph (the reference: the graph id) and "
        "outlast sends the root's on_chain_stream events",
        "runtime/events_mode.py (run_name = graph id; the root's stream events)",
    ),
    _gap(
        "threads_state_after_a_chat",
        "state",
        "a state's checkpoint has checkpoint_map: null (the reference leaves it out) and "
        "its metadata lacks the run's (assistant_id, created_by, owner, thread_id, "
        "user_id, run_attempt)",
        "api/lgshared.py state_json; the run's config.metadata (runtime/execution.py)",
    ),
    _gap(
        "runs_create_then_join",
        "create: metadata",
        "a Run's metadata is what the request sent ({}); the reference adds assistant_id, "
        "graph_id, created_by and the thread's owner",
        "service/launch.py (LgRun metadata)",
    ),
    Difference(
        "runs_create_then_join",
        "create: keys",
        "a Run has no langsmith_session_name key",
        "outlast sends no runs to LangSmith: there is no session to name",
    ),
    _gap(
        "assistants_system",
        "graph",
        "a drawn graph's node data has `id` (the runnable's class path); the reference's "
        "has only `name`",
        "api/lg/assistant_graphs.py",
    ),
    _gap("assistants_system", "graph xray", "as `graph`", "api/lg/assistant_graphs.py"),
    *(
        _gap(
            "assistants_create_update_versions",
            step,
            "an assistant made with config.configurable has context {}; the reference "
            "copies configurable into context",
            "service/assistants.py",
        )
        for step in ("create", "update", "versions", "set latest", "get")
    ),
    _gap(
        "errors_unknown_graph",
        "assistant of unknown graph",
        "an assistant of an unknown graph is 422; the reference answers 404",
        "service/assistants.py",
    ),
    _gap(
        "crons_bad_schedule",
        "unknown assistant",
        "a cron of an unknown assistant is 422; the reference answers 404",
        "service/crons.py",
    ),
    _gap(
        "crons_on_a_thread",
        "payload",
        "a cron's payload: configurable carries the auth user (the reference: the "
        "cron_id), no metadata or schedule in it",
        "service/crons.py",
    ),
    _gap(
        "auth_crons_admin_only",
        "admin creates",
        "as crons_on_a_thread / payload",
        "service/crons.py",
    ),
    _gap(
        "auth_crons_admin_only",
        "user creates",
        "an @auth.on.crons handler that returns False: 404 (the reference: 403)",
        "api/userauth.py / service/authz.py (another helper's)",
    ),
    _gap(
        "route_middleware_on_langgraph_routes",
        "ok",
        "GET /ok answers {ok: true}; the reference adds services: {}",
        "api/health.py",
    ),
]


def declared(scenario: str, step: str, backend: str) -> Difference | None:
    for d in DIFFERENCES:
        if d.scenario == scenario and d.step == step and backend in d.backends:
            return d
    return None
