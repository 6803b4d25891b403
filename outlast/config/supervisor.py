"""The supervisor's settings (``supervisor/``): what it may grant on an expired activity
lease, and what its model may cost. Apart from the server's other settings only for size;
``Settings`` inherits them, and each is still read as ``OUTLAST_SUPERVISOR_*``."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings


class SupervisorSettings(BaseSettings):
    # The supervisor, woken by an expired activity lease.
    supervisor: bool = Field(default=True, description="act on expired activity leases")
    supervisor_renewal_cap: int = Field(
        default=3, ge=0, description="renewals without progress before it intervenes"
    )
    supervisor_backoff: float = Field(
        default=2.0,
        ge=1.0,
        description="each renewal without progress lasts this many times the one before "
        "(the first: twice the lease); 1 renews by one lease each time",
    )
    # The model's second look before the cap (``supervisor/suspicion.py``): it can only
    # shorten the wait before the next look, never end or extend an operation.
    supervisor_early_look_from: int = Field(
        default=2,
        ge=0,
        description="from this many renewals without progress on, the model is asked "
        "before the cap too; a doubt brings the next look one lease away instead of the "
        "backed-off wait (0: the model is asked only past the cap)",
    )
    # The model's bounded extensions past the renewal cap (``supervisor/extension.py``):
    # at worst, what a model steered by an operation's text can delay a stuck one by.
    supervisor_extension_longest: float = Field(
        default=1800.0,
        gt=0,
        description="past the renewal cap, the longest extension (seconds) one model verdict "
        "may grant; a longer ask is clipped",
    )
    supervisor_extension_count: int = Field(
        default=3,
        ge=0,
        description="model-granted extensions per operation; then the ladder intervenes "
        "as without a model (0: the model never extends)",
    )
    supervisor_extension_per_operation: float = Field(
        default=5400.0,
        ge=0,
        description="seconds all the model's extensions of one operation may add up to",
    )
    supervisor_extension_per_run: float = Field(
        default=10800.0,
        ge=0,
        description="seconds all the model's extensions in one run may add up to, over "
        "its operations and attempts",
    )
    # What the semantic tier may spend (``supervisor/costs.py``). Over a budget the ladder
    # decides as without a model: it never kills, and never extends on no one's word.
    supervisor_max_calls_per_run: int = Field(
        default=20,
        ge=0,
        description="supervisor model calls one run may make, over its operations and "
        "attempts; past it the evidence alone decides (0: the model is never asked)",
    )
    supervisor_max_calls_per_minute: float = Field(
        default=60.0,
        ge=0,
        description="supervisor model calls per minute in one process (a token bucket that "
        "holds one minute's calls); past it the evidence alone decides",
    )
    supervisor_cache_size: int = Field(
        default=1024,
        ge=0,
        description="verdicts kept per process, one per operation state the model was "
        "shown (least recently used dropped first; 0: no cache)",
    )
    supervisor_cache_ttl: float = Field(
        default=300.0,
        ge=0,
        description="seconds a cached verdict answers the same question again; the "
        "clocks it was read against (silence, elapsed time) are at most this old",
    )
    supervisor_max_expected: float = Field(
        default=86_400.0,
        gt=0,
        description="the longest duration a node may declare with heartbeat(expected=...)",
    )
