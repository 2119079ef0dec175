"""Errors name files by their upload or server name, never by a path on the service host."""

from __future__ import annotations

from tests.app.conftest import OPERATOR, auth, wait_for_job

MAGIC = b"\xfebin"


def test_a_broken_uploaded_binlog_is_named_by_its_upload_name(make_client, tmp_path):
    data_dir = tmp_path / "service-data"
    client = make_client(data_dir=data_dir, engine="local")
    broken = MAGIC + bytes(range(256)) * 8  # the magic, then no valid event
    upload = client.post(
        "/api/uploads", headers=auth(OPERATOR), files=[("files", ("mysql-bin.000007", broken))]
    ).json()
    job = client.post(
        "/api/jobs",
        headers=auth(OPERATOR),
        json={"upload": upload["id"], "range": {"start_file": "mysql-bin.000007", "start_position": 4}},
    ).json()
    job = wait_for_job(client, job["id"])
    assert job["state"] == "failed", job
    error = job["error"]
    assert "mysql-bin.000007" in error, error
    for leak in (str(data_dir), str(data_dir.resolve()), "/uploads/", upload["id"] + "/"):
        assert leak not in error, error
    assert "/" not in error.replace("mysql-bin.000007", ""), error
