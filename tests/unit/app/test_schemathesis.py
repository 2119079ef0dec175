"""schemathesis against /openapi.json: no 5xx and no response that violates the schema, for any input.

Runs as the admin (every route reachable) on an app with no configured server, so that no
generated request can reach a database server."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from tests.support.app import ADMIN, auth


@pytest.mark.slow
def test_api_answers_every_generated_request_within_its_schema(make_client):
    import schemathesis  # here, not at collection: the fast lane never loads it (pyproject's -p no:schemathesis)
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance

    client = make_client()
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    seen: list[tuple[str, int]] = []
    modes = [schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE]
    for operation, mode in [(op, mode) for op in operations for mode in modes]:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            response = case.call_and_validate(
                headers=auth(ADMIN), checks=[not_a_server_error, response_schema_conformance]
            )
            seen.append((case.operation.label, response.status_code))

        try:
            check()
        except Unsatisfiable:
            assert mode == schemathesis.GenerationMode.NEGATIVE  # no input to get wrong (GET /health)
    statuses = {status for _, status in seen}
    assert {200, 404, 422} <= statuses and len(seen) > 200, sorted(set(seen))
