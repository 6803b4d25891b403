"""``GET /metrics``: the process's Prometheus metrics, the run gauges read from the store."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from outlast.api.context import AppContext
from outlast.runtime import metrics

router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {metrics.CONTENT_TYPE.split(";")[0]: {"schema": {"type": "string"}}},
            "description": "Prometheus text exposition format",
        }
    },
)
async def prometheus(request: Request) -> Response:
    """Prometheus text exposition format."""
    ctx: AppContext = request.app.state.ctx
    # Read at scrape time rather than kept up to date: runs change status in every
    # process, and one GROUP BY per scrape is cheaper than tracking each transition.
    metrics.refresh_runs(await ctx.store.count_runs_by_status())
    metrics.refresh_outbox(await ctx.store.count_deliveries())
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)
