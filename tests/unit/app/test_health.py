from __future__ import annotations

import json
import platform
import subprocess
import sys

import pyspark

import rollback
from tests.support import REPO


def test_health_reports_package_python_spark_versions_and_hot_path_without_starting_spark():
    # A fresh interpreter: earlier tests in this process may have started the process's Spark session.
    probe = (
        "import json; from fastapi.testclient import TestClient; from app.main import create_app; "
        "from rollback.pipeline import session; "
        "r = TestClient(create_app()).get('/health'); "
        "print(json.dumps({'status': r.status_code, 'body': r.json(), 'started': session._session is not None}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["status"] == 200
    body = result["body"]
    assert body["version"] == rollback.__version__
    assert body["python"] == platform.python_version()
    assert body["hot_path"] == "compiled"  # the suite runs with the compiled core built
    assert body["spark"]["version"] == pyspark.__version__
    assert body["spark"]["warm"] == "off" and body["spark"]["session"].startswith(
        "not started: Spark starts lazily"
    )
    assert "MYSQL_ROLLBACK_WARM_SPARK=true" in body["spark"]["session"]  # one story: what would start it
    assert result["started"] is False


def test_the_local_engine_never_warms_spark(make_client, tmp_path):
    client = make_client(data_dir=tmp_path / "data", warm_spark=True, engine="local")
    assert client.get("/health").json()["spark"]["warm"] == "off"
