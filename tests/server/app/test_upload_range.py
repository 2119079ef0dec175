"""A job on uploaded files whose range is not in them is rejected at submit (422 naming the field),
from the files' headers; a range that is in them is accepted and the job runs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support.app import OPERATOR, auth, servers_json, wait_for_job

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def upload_file(scratch_server):
    scratch_server.run_sql(
        ["CREATE DATABASE IF NOT EXISTS upr", "CREATE TABLE IF NOT EXISTS upr.t (id INT PRIMARY KEY)"]
    )
    rng = scratch_server.run_sql([f"INSERT INTO upr.t VALUES ({i})" for i in range(1, 6)], own_file=True)
    return rng


def test_a_range_outside_the_uploaded_files_is_a_422_naming_the_field(
    make_client, scratch_server, upload_file
):
    client = make_client(servers=servers_json(scratch_server), engine="local")
    path = upload_file.files[0]
    name = path.name
    size = path.stat().st_size
    upload = client.post(
        "/api/uploads",
        files=[("files", (name, path.read_bytes(), "application/octet-stream"))],
        headers=auth(OPERATOR),
    ).json()

    def submit(rng):
        body = {"upload": upload["id"], "range": rng, "options": {"schema_server": "scratch"}}
        return client.post("/api/jobs", json=body, headers=auth(OPERATOR))

    def field_errors(rng):
        response = submit(rng)
        assert response.status_code == 422, response.text
        return {tuple(e["loc"]): e["msg"] for e in response.json()["detail"]}

    found = field_errors({"start_file": name, "start_position": size + 100})
    assert f"past the end of {name} ({size} bytes)" in found[("body", "range", "start_position")]
    assert str(path.parent) not in str(found)  # named by its upload name, never a service path
    found = field_errors({"start_file": name, "start_position": 4, "stop_position": size + 1})
    assert ("body", "range", "stop_position") in found
    domain, server_id, last = upload_file.gtid_after.split("-")
    found = field_errors({"gtid_set": f"{domain}-{server_id}-{int(last) + 1000}"})
    assert "is in the uploaded files" in found[("body", "range", "gtid_set")]
    found = field_errors({"start_datetime": "2001-01-01 00:00:00", "stop_datetime": "2001-01-02 00:00:00"})
    assert "before the first event" in found[("body", "range", "stop_datetime")]
    found = field_errors({"start_datetime": "2099-01-01 00:00:00"})
    assert "after the last event" in found[("body", "range", "start_datetime")]

    # ranges that are in the file pass, and the jobs run
    now = datetime.now(UTC)
    for rng in (
        {"gtid_set": f"{domain}-{server_id}-{int(upload_file.gtid_before.split('-')[2]) + 1}..{last}"},
        {"start_file": name, "start_position": 4, "stop_position": size},
        {
            "start_datetime": f"{now.year - 1}-01-01 00:00:00",
            "stop_datetime": f"{now.year + 1}-01-01 00:00:00",
        },
    ):
        created = submit(rng)
        assert created.status_code == 202, created.text
        job = wait_for_job(client, created.json()["id"])
        assert job["state"] == "succeeded" and job["rows"] == 5, job
