"""Precise selection through the service: the API's pick fields, the report's dependent rows and
partial transactions, the new-job form's fields, and re-generating a job with ticked transactions."""

from __future__ import annotations

import re

import pytest

from tests.support.app import OPERATOR, VIEWER, auth, servers_json, wait_for_job

DB = "picks_api"


@pytest.fixture(scope="module")
def workload(scratch_server):
    """Two applications on one table, in a binlog file of its own; B changes row 2 after A did."""
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, app CHAR(1), v INT)",
            f"INSERT INTO {DB}.t VALUES (1, 'A', 1), (2, 'A', 2), (3, 'B', 3)",
        ]
    )
    gtids = []
    statements = [
        f"UPDATE {DB}.t SET v = v + 10 WHERE id IN (1, 2)",  # A
        f"UPDATE {DB}.t SET v = v + 100 WHERE id IN (2, 3)",  # B: row 2 again
        f"DELETE FROM {DB}.t WHERE id = 1",  # A
    ]
    rng = None
    conn = scratch_server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            start = scratch_server.binlog_position()
            for sql in statements:
                cur.execute(sql)
                cur.execute("SELECT @@last_gtid")
                gtids.append(cur.fetchone()[0])
            stop = scratch_server.binlog_position()
    finally:
        conn.close()
    assert start[0] == stop[0]
    rng = {"start_file": start[0], "start_position": start[1], "stop_position": stop[1]}
    return rng, gtids


def _job(client, rng, filters=None, options=None):
    body = {"server": "scratch", "range": rng, "filters": filters or {}, "options": options or {}}
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202, created.text
    return wait_for_job(client, created.json()["id"])


def test_api_picks_report_dependent_rows_and_refuse_partial_transactions(
    make_client, scratch_server, workload
):
    rng, gtids = workload
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng, {"picks": {"include_gtid": f"{gtids[0]},{gtids[2]}"}})
    assert job["state"] == "succeeded", job
    summary = client.get(f"/api/jobs/{job['id']}/summary", headers=auth(VIEWER)).json()
    summary = summary.get("summary", summary)
    assert summary["dependency_count"] == 1
    (dep,) = summary["dependencies"]
    assert dep["table"] == f"{DB}.t" and dep["key"] == "id=2"
    assert dep["selected"]["gtid"] == gtids[0] and dep["excluded"]["gtid"] == gtids[1]
    assert [t["gtid"] for t in summary["transactions_list"]] == [gtids[2], gtids[0]]
    assert any("changed again later by an excluded one" in w for w in job["warnings"])

    # --where keeping row 1 but not row 2 of A's first transaction: refused, then accepted
    refused = _job(client, rng, {"picks": {"where": "id = 1"}})
    assert refused["state"] == "failed" and refused["exit_code"] == 2
    assert gtids[0] in refused["error"] and "--allow-partial-transactions" in refused["error"]
    accepted = _job(client, rng, {"picks": {"where": "id = 1"}}, {"allow_partial_transactions": True})
    assert accepted["state"] == "succeeded", accepted
    summary = client.get(f"/api/jobs/{accepted['id']}/summary", headers=auth(VIEWER)).json()
    summary = summary.get("summary", summary)
    assert [(p["gtid"], p["picked"], p["dropped"]) for p in summary["partial_transactions"]] == [
        (gtids[0], 1, 1)
    ]


def test_api_refuses_bad_picks_up_front(make_client, scratch_server, workload):
    rng, _gtids = workload
    client = make_client(servers=servers_json(scratch_server))
    for filters, words in (
        ({"where": "SLEEP(1) = 0"}, "not supported"),
        ({"include_positions": ["nowhere"]}, "FILE:POS"),
        ({"include_query": "("}, "regular expression"),
    ):
        body = {"server": "scratch", "range": rng, "filters": {"picks": filters}}
        response = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
        assert response.status_code == 422, response.text
        (error,) = [e for e in response.json()["detail"] if e["loc"] == ["body", "filters", "picks"]]
        assert words.lower() in error["msg"].lower()


def test_web_form_picks_and_ticked_transactions_regenerate_the_job(make_client, scratch_server, workload):
    rng, gtids = workload
    client = make_client(servers=servers_json(scratch_server))
    client.post("/login", data={"token": OPERATOR, "next": "/jobs"})
    page = client.get("/jobs/new").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    assert 'id="picks"' in page and 'name="where"' in page and 'name="allow_partial_transactions"' in page
    form = {
        "csrf": csrf,
        "server": "scratch",
        "range_kind": "position",
        "start_file": rng["start_file"],
        "start_position": str(rng["start_position"]),
        "stop_position": str(rng["stop_position"]),
        "mode": "flashback",
        "exclude_gtid": gtids[1],
    }
    bad = client.post("/jobs/new", data={**form, "where": "id = (SELECT 1)"})
    assert bad.status_code == 422 and 'id="picks-error"' in bad.text and "SUBQUERY" in bad.text
    created = client.post("/jobs/new", data=form, follow_redirects=False)
    assert created.status_code == 303
    job_id = created.headers["location"].rsplit("/", 1)[1]
    job = wait_for_job(client, job_id)
    assert job["state"] == "succeeded" and job["filters"]["picks"]["exclude_gtid"] == gtids[1]
    page = client.get(f"/jobs/{job_id}").text
    assert 'id="dependencies"' in page and "id=2" in page
    assert f"exclude gtid: {gtids[1]}" in page
    ticks = re.findall(r'name="tx" value="([^"]+)"', page)
    assert len(ticks) == 2  # A's two transactions, newest first
    again = client.post(f"/jobs/{job_id}/picks", data={"csrf": csrf, "tx": ticks[0]}, follow_redirects=False)
    assert again.status_code == 303
    new_id = again.headers["location"].split("/")[2].split("#")[0]
    new = wait_for_job(client, new_id)
    assert new["state"] == "succeeded" and new["filters"]["picks"]["include_positions"] == [ticks[0]]
    assert new["transactions"] == 1
    page = client.get(f"/jobs/{new_id}").text
    assert f"gtid={gtids[2]}" in page and f"gtid={gtids[0]}" not in page
