"""MYSQL_ROLLBACK_ACCESS_LOG=false on a real `mysql-rollback serve`: no line per request (a service
that many clients poll), the service's own lines as before. (On, the default: test_json_logs.py.)"""

from __future__ import annotations

from tests.support.app import servers_json
from tests.support.service import service_env


def test_the_access_log_can_be_turned_off(service_process, scratch_server, tmp_path):
    env = service_env(tmp_path / "data", servers_json(scratch_server), MYSQL_ROLLBACK_ACCESS_LOG="false")
    service = service_process(tmp_path / "data", env, tmp_path / "service.log").start()
    try:
        for path in ("/health", "/api/jobs", "/api/jobs/" + "a" * 32, "/api/servers"):
            assert service.request("GET", path).status_code in (200, 404), path
    finally:
        service.stop()
    log = (tmp_path / "service.log").read_text(encoding="utf-8")
    assert "serving on http://" in log, log
    assert "uvicorn.access" not in log and '"GET /api/jobs' not in log, log
