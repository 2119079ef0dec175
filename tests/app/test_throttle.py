"""Failed authentication is throttled per client address, on a real service process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.app.conftest import ADMIN, VIEWER, auth
from tests.app.serviceproc import Service, service_env


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    env = service_env(tmp_path / "data", "{}", MYSQL_ROLLBACK_AUTH_FAILURES_PER_MINUTE="5")
    svc = Service(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        yield svc
    finally:
        svc.stop()


def _client(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)


def test_a_burst_of_wrong_tokens_is_throttled_and_other_addresses_are_not(service):
    with _client("127.0.0.1") as guesser, _client("127.0.0.2") as other:
        answers = [
            guesser.get(service.url + "/api/jobs", headers=auth(f"guess-{i:02d}-0123456789")).status_code
            for i in range(8)
        ]
        assert answers[:5] == [401] * 5 and answers[5:] == [429] * 3
        throttled = guesser.get(service.url + "/api/jobs", headers=auth(VIEWER))
        assert throttled.status_code == 429  # even the right token: a guesser learns nothing
        assert 1 <= int(throttled.headers["Retry-After"]) <= 60
        assert "try again" in throttled.json()["detail"]
        signin = guesser.post(service.url + "/login", data={"token": "another-guess-0123456"})
        assert signin.status_code == 429
        assert other.get(service.url + "/api/jobs", headers=auth(VIEWER)).status_code == 200
        assert other.get(service.url + "/health").status_code == 200


def test_successful_authentication_is_never_throttled(service):
    with _client("127.0.0.3") as client:
        for _ in range(30):
            assert client.get(service.url + "/api/jobs", headers=auth(ADMIN)).status_code == 200
        wrong = client.post(service.url + "/login", data={"token": "wrong-token-0123456789"})
        assert wrong.status_code == 401
