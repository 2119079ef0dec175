"""X-Request-ID: a client's short token is kept, anything else is replaced by a generated id; every
answer carries one (the id every log line of the request carries, docs/service.md, Logs)."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize(
    "given, kept",
    [("ci-run.42_a", True), ("", False), ("has space", False), ("x" * 65, False), ("ünïcode", False)],
)
def test_a_request_id_is_kept_only_when_it_is_a_short_token(make_client, given, kept):
    client = make_client()
    headers = {"X-Request-ID": given.encode("utf-8")} if given else {}
    answered = client.get("/health", headers=headers).headers["x-request-id"]
    if kept:
        assert answered == given
    else:
        assert re.fullmatch(r"[0-9a-f]{32}", answered), answered


def test_two_requests_get_two_ids(make_client):
    client = make_client()
    assert client.get("/health").headers["x-request-id"] != client.get("/health").headers["x-request-id"]
