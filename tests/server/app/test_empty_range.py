"""A service job whose range selects no row change fails saying what the files hold, unless allow_empty."""

from __future__ import annotations

import pytest

from tests.support.app import OPERATOR, auth, servers_json, wait_for_job

DB = "rchk_api"


@pytest.fixture(scope="module")
def one_file(scratch_server):
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY)",
        ]
    )
    return scratch_server.run_sql([f"INSERT INTO {DB}.t VALUES (1)"], own_file=True).files[0]


def test_a_service_job_with_an_empty_range_fails_with_that_message_unless_allowed(
    make_client, scratch_server, one_file
):
    a = one_file
    client = make_client(servers=servers_json(scratch_server))
    upload = client.post(
        "/api/uploads",
        files=[("files", (a.name, a.read_bytes(), "application/octet-stream"))],
        headers=auth(OPERATOR),
    )
    assert upload.status_code == 201, upload.text
    body = {
        "upload": upload.json()["id"],
        # the range is in the file (a GTID absent from it is a 422 at submit: tests/server/app/test_upload_range.py)
        "range": {"start_file": a.name, "start_position": 4},
        "filters": {"types": ["delete"]},
        "options": {"schema_server": "scratch"},
    }
    failed = wait_for_job(client, client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"])
    assert failed["state"] == "failed" and "the range selected no row change" in failed["error"]
    assert f"{DB}.t (insert 1)" in failed["error"]
    assert failed["exit_code"] == 4  # as the CLI exits for the same range
    body["options"]["allow_empty"] = True
    allowed = wait_for_job(client, client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"])
    assert allowed["state"] == "succeeded" and allowed["exit_code"] == 0, allowed
    assert any("selected no row change" in w for w in allowed["warnings"])
