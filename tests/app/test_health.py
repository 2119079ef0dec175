from __future__ import annotations

import platform

import pyspark
from fastapi.testclient import TestClient

import rollback
from app.main import create_app


def test_health_reports_package_python_and_spark_versions_without_starting_spark():
    client = TestClient(create_app())
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["version"] == rollback.__version__
    assert body["python"] == platform.python_version()
    assert body["spark"]["version"] == pyspark.__version__
    assert "lazily" in body["spark"]["session"]
