"""The REST API through TestClient: auth, validation, uploads, artifacts with paging, cancel, recovery."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests.support.app import OPERATOR, VIEWER, auth, servers_json, wait_for_execution, wait_for_job


@pytest.fixture(scope="module")
def workload_file(scratch_server):
    """A whole binlog file holding a small workload on api.t, and the table's checksum before it."""
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS api",
            "CREATE TABLE IF NOT EXISTS api.t (id INT PRIMARY KEY, v VARCHAR(30), n DECIMAL(8,2))",
            "INSERT INTO api.t VALUES (1, 'one', 1.5), (2, 'two', 2.5)",
        ]
    )
    before = scratch_server.query("CHECKSUM TABLE api.t EXTENDED")
    statements = [f"INSERT INTO api.t VALUES ({i}, 'row {i}', {i}.25)" for i in range(10, 40)]
    statements += ["UPDATE api.t SET v = CONCAT(v, '!') WHERE id < 20", "DELETE FROM api.t WHERE id >= 35"]
    rng = scratch_server.run_sql(statements, own_file=True)
    return rng, before


def _upload(client, path: Path, token: str = OPERATOR):
    return client.post(
        "/api/uploads",
        files=[("files", (path.name, path.read_bytes(), "application/octet-stream"))],
        headers=auth(token),
    )


def test_a_role_too_weak_gets_403_and_only_admin_commits(make_client, scratch_server, workload_file):
    client = make_client(servers=servers_json(scratch_server))
    body = {"server": "scratch", "range": {"start_file": "mysql-bin.000001", "start_position": 4}}
    denied = client.post("/api/jobs", json=body, headers=auth(VIEWER))
    assert denied.status_code == 403 and "operator" in denied.json()["detail"]
    rng, _ = workload_file
    body["range"] = {
        "start_file": rng.start_file,
        "start_position": rng.start_position,
        "stop_file": rng.stop_file,
        "stop_position": rng.stop_position,
    }
    job = wait_for_job(client, client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"])
    assert job["state"] == "succeeded", job
    url = f"/api/jobs/{job['id']}/executions"
    before = scratch_server.query("CHECKSUM TABLE api.t EXTENDED")
    commit = client.post(url, json={"target": "scratch", "dry_run": False}, headers=auth(OPERATOR))
    assert commit.status_code == 403 and "admin" in commit.json()["detail"]
    assert client.post(url, json={"target": "scratch"}, headers=auth(VIEWER)).status_code == 403
    dry = wait_for_execution(client, client.post(url, json={"target": "scratch"}, headers=auth(OPERATOR)))
    assert dry["dry_run"] and dry["state"] == "succeeded" and not dry["committed"]
    assert dry["statements"] == job["statements"] > 0
    assert scratch_server.query("CHECKSUM TABLE api.t EXTENDED") == before
    listed = client.get(url, headers=auth(VIEWER)).json()
    assert [e["requested_by"] for e in listed] == ["otto"]


def test_job_requests_are_validated_up_front_with_field_errors(make_client, scratch_server):
    down = {"down": "mysql://u:pw-of-a-server-that-is-down@127.0.0.1:1/"}
    client = make_client(servers=servers_json(scratch_server, **down))

    def errors(body):
        response = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
        assert response.status_code == 422, response.text
        assert "pw-of-a-server-that-is-down" not in response.text
        return {tuple(e["loc"]): e["msg"] for e in response.json()["detail"]}

    assert ("body", "server") in errors({"server": "nope", "range": {"gtid_set": "0-1-1"}})
    assert ("body", "range") in errors({"server": "scratch", "range": {}})
    assert ("body", "range") in errors(
        {"server": "scratch", "range": {"gtid_set": "0-1-1", "start_datetime": "2024-01-01 00:00:00"}}
    )
    found = errors({"server": "scratch", "range": {"gtid_set": "0-1-9..0-1-2"}})
    assert "ends before it starts" in found[("body", "range", "gtid_set")]
    found = errors(
        {
            "server": "scratch",
            "range": {"start_datetime": "yesterday", "stop_datetime": "2024-01-01 00:00:00"},
        }
    )
    assert "YYYY-MM-DD" in found[("body", "range", "start_datetime")]
    found = errors(
        {
            "server": "scratch",
            "range": {"start_file": "mysql-bin.000001", "start_position": 900, "stop_position": 100},
        }
    )
    assert ("body", "range", "stop_position") in found
    found = errors({"server": "scratch", "range": {"start_file": "mysql-bin.999999", "start_position": 4}})
    assert "not a binlog file" in found[("body", "range", "start_file")]
    found = errors({"server": "scratch", "range": {"start_file": "../etc/passwd", "start_position": 4}})
    assert ("body", "range", "start_file") in found
    found = errors({"server": "scratch", "range": {"gtid_set": "0-1-1"}, "filters": {"types": ["truncate"]}})
    assert ("body", "filters", "types", 0) in found
    found = errors({"server": "scratch", "range": {"gtid_set": "0-1-1"}, "filters": {"tables": ["nodot"]}})
    assert ("body", "filters", "tables", 0) in found
    assert ("body", "upload") in errors({"upload": "missing", "range": {"gtid_set": "0-1-1"}})
    # Servers read over the protocol are asked for their binary logs up front.
    found = errors(
        {"server": "scratch_live", "range": {"start_file": "mysql-bin.999999", "start_position": 4}}
    )
    assert "not among the binary logs of scratch_live" in found[("body", "range", "start_file")]
    down = errors({"server": "down", "range": {"start_file": "mysql-bin.000001", "start_position": 4}})
    assert "cannot list the binary logs of down" in down[("body", "server")]
    assert ("body", "surprise") in errors(
        {"server": "scratch", "range": {"gtid_set": "0-1-1"}, "surprise": 1}
    )
    bad_json = client.post(
        "/api/jobs", content=b"{not json", headers={**auth(OPERATOR), "Content-Type": "application/json"}
    )
    assert bad_json.status_code == 422 and bad_json.json()["detail"]
    # Control characters would reach the script's comment lines: refused on their field.
    hostile = {
        "server": "scratch",
        "range": {"gtid_set": "0-1-1\nDROP DATABASE x;"},
        "filters": {"databases": ["ok", "a\u2028b"], "tables": ["db.t\x00"]},
    }
    found = errors(hostile)
    assert "control character (U+000A)" in found[("body", "range", "gtid_set")]
    assert "control character (U+2028)" in found[("body", "filters", "databases", 1)]
    assert "control character (U+0000)" in found[("body", "filters", "tables", 0)]
    assert ("body", "filters", "databases", 0) not in found
    found = errors({"server": "scratch", "range": {"start_datetime": "2024-01-01 00:00:00\r"}})
    assert "control character (U+000D)" in found[("body", "range", "start_datetime")]


def test_uploaded_binlog_job_serves_script_changes_and_summary_with_paging(
    make_client, scratch_server, workload_file
):
    rng, _ = workload_file
    client = make_client(servers=servers_json(scratch_server))
    upload = _upload(client, rng.files[0])
    assert upload.status_code == 201, upload.text
    assert upload.json()["files"] == [{"name": rng.files[0].name, "size": rng.files[0].stat().st_size}]
    body = {
        "upload": upload.json()["id"],
        "range": {"start_file": rng.files[0].name, "start_position": 4},
        "filters": {"databases": ["api"]},
        "options": {"schema_server": "scratch"},
    }
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202 and created.json()["state"] in ("queued", "running", "succeeded")
    job = wait_for_job(client, created.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["progress"]["percent"] == 100.0 and job["progress"]["bytes"] == job["progress"]["total"] > 0
    assert {(c["type"], c["rows"]) for c in job["counts"]} == {("insert", 30), ("update", 12), ("delete", 5)}

    whole = client.get(f"/api/jobs/{job['id']}/script", headers=auth(VIEWER))
    assert whole.status_code == 200 and whole.headers["content-type"].startswith("application/sql")
    text = whole.text
    assert "INSERT INTO `api`.`t`" in text and "DELETE FROM `api`.`t`" in text
    lines = text.splitlines(keepends=True)
    page = client.get(f"/api/jobs/{job['id']}/script?offset=5&limit=7", headers=auth(VIEWER))
    assert page.text == "".join(lines[5:12])
    assert page.headers["x-total-lines"] == str(len(lines)) and page.headers["x-next-offset"] == "12"
    last = client.get(f"/api/jobs/{job['id']}/script?offset={len(lines) - 2}&limit=50", headers=auth(VIEWER))
    assert last.text == "".join(lines[-2:]) and "x-next-offset" not in last.headers
    ranged = client.get(f"/api/jobs/{job['id']}/script", headers={**auth(VIEWER), "Range": "bytes=10-29"})
    assert ranged.status_code == 206 and ranged.content == whole.content[10:30]
    download = client.get(f"/api/jobs/{job['id']}/script?download=true", headers=auth(VIEWER))
    assert "attachment" in download.headers["content-disposition"]

    changes = client.get(f"/api/jobs/{job['id']}/changes?offset=0&limit=3", headers=auth(VIEWER))
    assert changes.headers["content-type"].startswith("application/x-ndjson")
    assert len(changes.text.splitlines()) == 3 and changes.headers["x-total-lines"] == "47"
    summary = client.get(f"/api/jobs/{job['id']}/summary", headers=auth(VIEWER)).json()
    assert summary["tables"] == [{"table": "api.t", "rows": 47, "insert": 30, "update": 12, "delete": 5}]
    assert summary["largest_transactions"][0]["statements"] == 12
    assert summary["server_version"].startswith("10.")


def test_uploads_refuse_files_that_are_not_binlogs_and_files_over_the_limit(
    make_client, workload_file, tmp_path
):
    rng, _ = workload_file
    client = make_client(max_upload_bytes=1000)
    fake = tmp_path / "mysql-bin.000001"
    fake.write_bytes(b"not a binlog")
    response = _upload(client, fake)
    assert response.status_code == 422 and "not a binlog" in response.json()["detail"][0]["msg"]
    response = _upload(client, rng.files[0])
    assert response.status_code == 413 and "limit" in response.json()["detail"]
    bad_name = client.post(
        "/api/uploads",
        files=[("files", ("../x.000001", io.BytesIO(b"\xfebin"), "x"))],
        headers=auth(OPERATOR),
    )
    assert bad_name.status_code == 422
    assert not list((tmp_path / "data" / "uploads").glob("*/*"))


def test_cancel_a_queued_job_at_once_and_a_finished_one_is_409(make_client, scratch_server, workload_file):
    client = make_client(servers=servers_json(scratch_server), workers=1)
    client.app.state.services.runner.stop()  # nobody takes queued jobs now
    body = {"server": "scratch", "range": {"gtid_set": "0-1-1"}}
    job = client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()
    assert job["state"] == "queued"
    cancelled = client.post(f"/api/jobs/{job['id']}/cancel", headers=auth(OPERATOR))
    assert cancelled.status_code == 202 and cancelled.json()["state"] == "cancelled"
    again = client.post(f"/api/jobs/{job['id']}/cancel", headers=auth(OPERATOR))
    assert again.status_code == 409 and "already finished" in again.json()["detail"]
    assert client.post("/api/jobs/nope/cancel", headers=auth(OPERATOR)).status_code == 404
    assert client.get(f"/api/jobs/{job['id']}/script", headers=auth(VIEWER)).status_code == 409
    listed = client.get("/api/jobs?state=cancelled", headers=auth(VIEWER)).json()
    assert [j["id"] for j in listed["items"]] == [job["id"]] and listed["total"] == 1


def test_servers_are_listed_without_passwords_and_their_time_zone_is_known(make_client, scratch_server):
    client = make_client(servers=servers_json(scratch_server))
    listed = client.get("/api/servers", headers=auth(VIEWER))
    assert [s["name"] for s in listed.json()] == ["scratch", "scratch_live"]
    assert scratch_server.password not in listed.text
    tz = client.get("/api/servers/scratch/time-zone", headers=auth(VIEWER)).json()
    assert tz["error"] is None and re.fullmatch(r"[+-]\d\d:\d\d", tz["utc_offset"])
    assert client.get("/api/servers/nope/time-zone", headers=auth(VIEWER)).status_code == 404


def test_trust_schema_reaches_the_job_and_the_summary_says_how_the_schema_was_checked(
    make_client, scratch_server
):
    """A DDL after the uploaded range refuses the server's schema; options.trust_schema accepts it."""
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS api",
            "CREATE OR REPLACE TABLE api.trusted (id INT PRIMARY KEY, a INT, b INT)",
            "INSERT INTO api.trusted VALUES (1, 1, 1)",
        ]
    )
    rng = scratch_server.run_sql(["UPDATE api.trusted SET a = 2"], own_file=True)
    scratch_server.run_sql(["ALTER TABLE api.trusted MODIFY a INT AFTER b"])
    client = make_client(servers=servers_json(scratch_server))
    upload = _upload(client, rng.files[0]).json()["id"]

    def job(**options):
        body = {
            "upload": upload,
            "range": {"start_file": rng.files[0].name, "start_position": 4},
            "filters": {"tables": ["api.trusted"]},
            "options": {"schema_server": "scratch", **options},
        }
        created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
        assert created.status_code == 202, created.text
        return wait_for_job(client, created.json()["id"])

    refused = job()
    assert refused["state"] == "failed"
    assert (
        "table api.trusted: DDL after the range" in refused["error"] and "--trust-schema" in refused["error"]
    )
    trusted = job(trust_schema=True)
    assert trusted["state"] == "succeeded", trusted
    summary = client.get(f"/api/jobs/{trusted['id']}/summary", headers=auth(VIEWER)).json()
    assert summary["schema_check"] == {
        "source": "server information_schema of scratch",
        "checked": "not checked: --trust-schema",
    }


def test_ddl_keep_reaches_the_job_and_the_summary_shows_the_schema_timeline(make_client, scratch_server):
    """options.ddl = keep follows the DDL after the range; the summary and the job page show the
    table's schema timeline; an unknown mode is a 422 on the field."""
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS api",
            "CREATE OR REPLACE TABLE api.migrated (id INT PRIMARY KEY, a INT)",
            "INSERT INTO api.migrated VALUES (1, 1), (2, 2)",
        ]
    )
    rng = scratch_server.run_sql(["DELETE FROM api.migrated WHERE id = 2"], own_file=True)
    scratch_server.run_sql(["ALTER TABLE api.migrated ADD COLUMN note VARCHAR(10) DEFAULT 'x' AFTER id"])
    client = make_client(servers=servers_json(scratch_server))
    upload = _upload(client, rng.files[0]).json()["id"]
    body = {
        "upload": upload,
        "range": {"start_file": rng.files[0].name, "start_position": 4},
        "filters": {"tables": ["api.migrated"]},
        "options": {"schema_server": "scratch", "ddl": "keep"},
    }
    bad = client.post("/api/jobs", json={**body, "options": {"ddl": "sideways"}}, headers=auth(OPERATOR))
    assert bad.status_code == 422 and "ddl" in bad.text
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202, created.text
    done = wait_for_job(client, created.json()["id"])
    assert done["state"] == "succeeded", done
    summary = client.get(f"/api/jobs/{done['id']}/summary", headers=auth(VIEWER)).json()
    assert summary["ddl_mode"] == "keep"
    (timeline,) = summary["schema_timelines"]
    assert timeline["table"] == "api.migrated"
    assert [e["definition"] for e in timeline["epochs"]] == [
        "api.migrated(id int, a int)",
        "api.migrated(id int, note varchar, a int)",
    ]
    assert timeline["epochs"][1]["ddl"].startswith("ALTER TABLE api.migrated ADD COLUMN note")
    page = client.get(f"/jobs/{done['id']}", headers=auth(VIEWER)).text
    assert 'id="schema-timelines"' in page and "<caption>api.migrated</caption>" in page
    assert "api.migrated(id int, note varchar, a int)" in page


def test_rows_lost_without_row_events_fail_the_job_unless_accepted_and_the_summary_lists_them(
    make_client, scratch_server
):
    """A TRUNCATE of a table the range has no row change for fails the job naming it;
    options.accept_lost_rows accepts it, and the summary and the job page list it."""
    scratch_server.run_sql(
        [
            "CREATE DATABASE IF NOT EXISTS api",
            "CREATE OR REPLACE TABLE api.kept (id INT PRIMARY KEY, a INT)",
            "CREATE OR REPLACE TABLE api.wiped (id INT PRIMARY KEY)",
            "INSERT INTO api.kept VALUES (1, 1)",
            "INSERT INTO api.wiped VALUES (1), (2)",
        ]
    )
    rng = scratch_server.run_sql(["UPDATE api.kept SET a = 2", "TRUNCATE TABLE api.wiped"], own_file=True)
    client = make_client(servers=servers_json(scratch_server))
    upload = _upload(client, rng.files[0]).json()["id"]

    def job(**options):
        body = {
            "upload": upload,
            "range": {"start_file": rng.files[0].name, "start_position": 4},
            "options": {"schema_server": "scratch", **options},
        }
        created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
        assert created.status_code == 202, created.text
        return wait_for_job(client, created.json()["id"])

    refused = job()
    assert refused["state"] == "failed"
    assert "destroyed rows without row events" in refused["error"]
    assert "TRUNCATE TABLE api.wiped" in refused["error"] and "--accept-lost-rows" in refused["error"]
    accepted = job(accept_lost_rows=True)
    assert accepted["state"] == "succeeded", accepted
    summary = client.get(f"/api/jobs/{accepted['id']}/summary", headers=auth(VIEWER)).json()
    (item,) = summary["lost_rows"]
    assert item["sql"] == "TRUNCATE TABLE api.wiped" and item["tables"] == ["api.wiped"]
    assert item["file"] == rng.files[0].name
    page = client.get(f"/jobs/{accepted['id']}", headers=auth(VIEWER)).text
    assert 'id="lost-rows"' in page and "TRUNCATE TABLE api.wiped" in page
