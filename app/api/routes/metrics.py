"""GET /metrics: Prometheus text format (jobs by state, bytes decoded, rows emitted, job durations)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import ServicesDep, Viewer
from app.schemas import ERRORS

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={**ERRORS, 200: {"content": {"text/plain": {}}}})
def metrics(services: ServicesDep, _: Viewer) -> Response:
    return Response(generate_latest(services.metrics.registry), media_type=CONTENT_TYPE_LATEST)
