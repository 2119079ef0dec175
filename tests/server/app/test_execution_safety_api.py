"""Side effects through the service: the job's summary and page list the triggers, cascading foreign keys
and non-transactional tables the reverse statements meet; an execution that does not accept them is
refused (409, recorded), the confirmation page offers the acceptances, and an accepted one runs."""

from __future__ import annotations

import re
import time

import pytest

from tests.support.app import (
    ADMIN,
    EXECUTION_FINAL,
    OPERATOR,
    VIEWER,
    auth,
    servers_json,
    wait_for_execution,
    wait_for_job,
)
from tests.support.restore import snapshot

DB = "apisafe"
TABLES = [f"{DB}.acct", f"{DB}.audit", f"{DB}.parent", f"{DB}.child", f"{DB}.counter"]


@pytest.fixture()
def incident(scratch_server):
    """An audit trigger, a cascading foreign key and a MyISAM table, each met by the incident."""
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.acct (id INT PRIMARY KEY, v INT)",
            f"CREATE TABLE {DB}.audit (n INT AUTO_INCREMENT PRIMARY KEY, id INT)",
            f"CREATE TRIGGER {DB}.acct_audit AFTER INSERT ON {DB}.acct "
            f"FOR EACH ROW INSERT INTO {DB}.audit (id) VALUES (NEW.id)",
            f"CREATE TABLE {DB}.parent (id INT PRIMARY KEY)",
            f"CREATE TABLE {DB}.child (id INT PRIMARY KEY, pid INT, CONSTRAINT child_fk FOREIGN KEY (pid) "
            f"REFERENCES {DB}.parent (id) ON DELETE CASCADE)",
            f"CREATE TABLE {DB}.counter (id INT PRIMARY KEY, n INT) ENGINE=MyISAM",
            f"INSERT INTO {DB}.acct VALUES (1, 1), (2, 2)",
            f"INSERT INTO {DB}.parent VALUES (1), (2)",
            f"INSERT INTO {DB}.child VALUES (10, 1), (20, 2)",
            f"INSERT INTO {DB}.counter VALUES (1, 0)",
        ]
    )
    rng = scratch_server.run_sql(
        [
            f"DELETE FROM {DB}.acct WHERE id = 2",
            f"DELETE FROM {DB}.parent WHERE id = 1",
            f"UPDATE {DB}.counter SET n = n + 1",
        ],
        own_file=True,
    )
    return rng, snapshot(scratch_server, TABLES)


def _job(client, rng) -> dict:
    body = {
        "server": "scratch",
        "range": {"start_file": rng.start_file, "start_position": 4},
        "filters": {"databases": [DB]},
    }
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202, created.text
    job = wait_for_job(client, created.json()["id"])
    assert job["state"] == "succeeded", job
    return job


def _until_ended(client, job_id):
    """The job's executions once none is queued or running (the web form queues them as the API does)."""
    deadline = time.monotonic() + 60
    while True:
        executions = client.get(f"/api/jobs/{job_id}/executions", headers=auth(VIEWER)).json()
        if all(e["state"] in EXECUTION_FINAL for e in executions):
            return executions
        assert time.monotonic() < deadline, executions
        time.sleep(0.05)


def _checked(client, job_id, data):
    """The web form's conflict check: queued by the POST, followed to its end, then its panel."""
    queued = client.post(f"/jobs/{job_id}/execute/check", data=data)
    assert queued.status_code == 200 and re.search(rf"/jobs/{job_id}/execute/\d+$", str(queued.url)), (
        queued.url
    )
    _until_ended(client, job_id)
    return client.get(str(queued.url))


def test_the_api_lists_side_effects_refuses_what_is_not_accepted_and_runs_what_is(
    make_client, scratch_server, incident
):
    rng, after = incident
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng)
    summary = client.get(f"/api/jobs/{job['id']}/summary", headers=auth(VIEWER)).json()
    found = summary["side_effects"]
    assert [t["trigger"] for t in found["triggers"]] == [f"{DB}.acct_audit"]
    assert [(c["constraint"], c["parent_rows"]) for c in found["cascades"]] == [(f"{DB}.child_fk", 1)]
    assert found["non_transactional"] == [{"table": f"{DB}.counter", "engine": "MyISAM", "statements": 1}]
    warnings = " | ".join(summary["warnings"])
    assert f"trigger {DB}.acct_audit" in warnings and f"foreign key {DB}.child_fk" in warnings
    assert f"{DB}.counter is a MyISAM table" in warnings
    largest = summary["largest_statement"]
    assert largest["bytes"] > 0 and largest["table"].startswith(f"{DB}.") and largest["pos"] > 0

    url = f"/api/jobs/{job['id']}/executions"
    refused = wait_for_execution(client, client.post(url, json={"target": "scratch"}, headers=auth(OPERATOR)))
    assert refused["state"] == "refused" and "--accept-triggers" in refused["error"]
    assert refused["exit_code"] == 2  # refused, as the CLI exits
    dry = wait_for_execution(
        client, client.post(url, json={"target": "scratch", "accept_triggers": True}, headers=auth(OPERATOR))
    )
    assert dry["state"] == "succeeded" and dry["read_only_tables"] == [f"{DB}.counter"]
    assert snapshot(scratch_server, TABLES) == after  # the MyISAM table too

    commit = {"target": "scratch", "dry_run": False, "accept_triggers": True}
    refused_commit = wait_for_execution(client, client.post(url, json=commit, headers=auth(ADMIN)))
    detail = refused_commit["error"]
    assert refused_commit["state"] == "refused"
    assert "--accept-cascades" in detail and f"--accept-non-transactional {DB}.counter" in detail
    assert snapshot(scratch_server, TABLES) == after
    commit |= {"accept_cascades": True, "accept_non_transactional": [f"{DB}.counter"]}
    done = wait_for_execution(client, client.post(url, json=commit, headers=auth(ADMIN)))
    assert done["committed"] and done["exit_code"] == 0, done
    assert done["per_transaction"] is False and done["non_transactional_applied"] == {f"{DB}.counter": 1}
    assert done["accepted"] == {
        "triggers": True,
        "cascades": True,
        "non_transactional": [f"{DB}.counter"],
    }
    assert scratch_server.query(f"SELECT id FROM {DB}.parent ORDER BY id") == [(1,), (2,)]
    assert scratch_server.query(f"SELECT id FROM {DB}.child ORDER BY id") == [(20,)]  # as the warning said

    listed = client.get(url, headers=auth(VIEWER)).json()
    assert [e["state"] for e in listed] == ["refused", "succeeded", "refused", "succeeded"]
    assert listed[0]["side_effects"]["triggers"][0]["trigger"] == f"{DB}.acct_audit"
    assert listed[0]["accepted"] == {"triggers": False, "cascades": False, "non_transactional": []}
    assert "--accept-triggers" in listed[0]["error"]


def test_the_web_pages_show_the_side_effects_and_carry_the_acceptances(make_client, scratch_server, incident):
    rng, after = incident
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng)
    client.post("/login", data={"token": ADMIN, "next": "/jobs"})
    page = client.get(f"/jobs/{job['id']}").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
    panel = page[page.index('id="executions"') :]
    assert f"trigger {DB}.acct_audit (AFTER INSERT on {DB}.acct) fires again" in panel
    assert f"foreign key {DB}.child_fk" in panel and f"{DB}.counter is a MyISAM table" in panel
    assert 'name="accept_triggers"' in panel
    assert 'id="largest-statement"' in panel
    assert 'id="schema-check"' in page and "checked: no DDL on the changed tables" in page

    # without letting triggers fire, the check is refused and says why; the target's side effects show
    check = _checked(client, job["id"], {"csrf": csrf, "target": "scratch"})
    assert check.status_code == 200 and "--accept-triggers" in check.text
    assert 'id="confirm-form"' not in check.text
    assert f"trigger {DB}.acct_audit" in check.text[check.text.index('id="target-side-effects"') :]

    data = {"csrf": csrf, "target": "scratch", "accept_triggers": "on"}
    check = _checked(client, job["id"], data)
    assert 'id="no-conflicts"' in check.text and f"validated by reads (non-transactional): {DB}.counter" in (
        check.text.replace("\n", " ")
    )
    assert 'id="largest-statement"' in check.text[check.text.index('id="target-side-effects"') :]
    form = check.text[check.text.index('id="confirm-form"') :]
    assert 'name="accept_triggers" value="on"' in form and 'name="accept_cascades"' in form
    assert re.search(rf'name="accept_non_transactional" value="{DB}\.counter"', form)
    assert snapshot(scratch_server, TABLES) == after

    assert 'id="what-will-run"' in check.text and 'id="transaction-mode"' in check.text
    assert re.search(r'id="confirm-target"[^>]*data-expect="scratch"', check.text)

    # a commit needs the target's name typed; a wrong one runs nothing
    confirm = {"csrf": csrf, "target": "scratch", "confirm": "yes", "accept_triggers": "on"}
    wrong = client.post(f"/jobs/{job['id']}/execute", data=confirm | {"confirm_target": "scratch2"})
    assert wrong.status_code == 422 and "name (scratch) to confirm the commit" in wrong.text
    # confirming without ticking the cascade and table boxes is refused and recorded
    confirm["confirm_target"] = "scratch"
    client.post(f"/jobs/{job['id']}/execute", data=confirm)
    _until_ended(client, job["id"])
    assert snapshot(scratch_server, TABLES) == after
    page = client.get(f"/jobs/{job['id']}").text
    assert "refused" in page and "--accept-cascades" in page
    confirm |= {"accept_cascades": "on", "accept_non_transactional": f"{DB}.counter"}
    client.post(f"/jobs/{job['id']}/execute", data=confirm)
    executions = _until_ended(client, job["id"])
    # the two conflict checks (a refused one, a clean one), then the two commits
    assert [e["state"] for e in executions] == ["refused", "succeeded", "refused", "succeeded"]
    assert [e["check"] for e in executions] == [True, True, False, False] and executions[-1]["committed"]
    assert scratch_server.query(f"SELECT id FROM {DB}.parent ORDER BY id") == [(1,), (2,)]
