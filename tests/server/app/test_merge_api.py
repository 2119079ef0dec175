"""Merge rollback through the API (issue 28): a job with `net`, the resolutions document stored on the
job (PUT/GET, a bad one a 422 of one line), and executions with `merge`: later changes to other
columns kept, conflicts resolved as the stored (or the body's) document says, the record listing
every conflicting row with its resolution and the counts."""

from __future__ import annotations

import pytest

from tests.support.app import ADMIN, OPERATOR, VIEWER, auth, servers_json, wait_for_execution, wait_for_job
from tests.support.restore import snapshot

DB = "mergeapi"
TABLE = f"{DB}.t"

pytestmark = pytest.mark.both_ways_off("rows change after the incident on purpose: the merge keeps them")


@pytest.fixture()
def late(scratch_server):
    """The incident (an UPDATE of a and b, a DELETE, an INSERT), then the application's later writes:
    c of row 1 (must survive), a of row 2 (a conflict), row 3's key re-taken, the inserted row 5
    updated. Returns the incident's range and the table as the later writes left it."""
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, a INT, b INT, c VARCHAR(20))",
            f"INSERT INTO {TABLE} VALUES (1, 1, 1, 'x'), (2, 2, 2, 'y'), (3, 3, 3, 'z'), (4, 4, 4, 'w')",
        ]
    )
    rng = scratch_server.run_sql(
        [
            f"UPDATE {TABLE} SET a = a + 10, b = b + 10 WHERE id IN (1, 2)",
            f"UPDATE {TABLE} SET a = a + 10 WHERE id IN (1, 2)",  # touched twice: one net statement
            f"DELETE FROM {TABLE} WHERE id = 3",
            f"INSERT INTO {TABLE} VALUES (5, 5, 5, 'new')",
        ],
        own_file=True,
    )
    scratch_server.run_sql(
        [
            f"UPDATE {TABLE} SET c = 'later' WHERE id = 1",
            f"UPDATE {TABLE} SET a = 99 WHERE id = 2",
            f"INSERT INTO {TABLE} VALUES (3, 30, 30, 'retaken')",
            f"UPDATE {TABLE} SET b = 55 WHERE id = 5",
        ]
    )
    return rng, snapshot(scratch_server, [TABLE])


def _rows(scratch_server) -> list[tuple]:
    return scratch_server.query(f"SELECT id, a, b, c FROM {TABLE} ORDER BY id")


def _job(client, rng, net: bool = True) -> dict:
    body = {
        "server": "scratch",
        "range": {
            "start_file": rng.start_file,
            "start_position": 4,
            "stop_file": rng.stop_file,
            "stop_position": rng.stop_position,
        },
        "filters": {"databases": [DB]},
        "options": {"net": net},
    }
    created = client.post("/api/jobs", json=body, headers=auth(OPERATOR))
    assert created.status_code == 202, created.text
    job = wait_for_job(client, created.json()["id"])
    assert job["state"] == "succeeded", job
    return job


def _execute(client, job_id: str, token: str = ADMIN, **body) -> dict:
    url = f"/api/jobs/{job_id}/executions"
    return wait_for_execution(
        client, client.post(url, json={"target": "scratch", **body}, headers=auth(token))
    )


def test_a_merge_keeps_later_changes_and_applies_the_stored_resolutions(make_client, scratch_server, late):
    rng, after = late
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng)
    assert job["options"]["net"] is True
    assert job["statements"] == 4  # rows 1 and 2 touched twice: one statement each
    # the change log of a net job lists the range's changes as they happened (produced on first need)
    changes = client.get(f"/api/jobs/{job['id']}/changes", headers=auth(VIEWER))
    assert changes.status_code == 200 and len(changes.text.splitlines()) == 6, changes.text

    # the strict default still reports row 1 (c changed since) as a conflict
    strict = _execute(client, job["id"], token=OPERATOR)
    assert strict["state"] == "conflict" and strict["merge"] is False and strict["merge_result"] is None
    assert snapshot(scratch_server, [TABLE]) == after

    # no document stored: a merge stops on its conflicts, nothing applied
    url = f"/api/jobs/{job['id']}/resolutions"
    assert client.get(url, headers=auth(VIEWER)).status_code == 404
    stopped = _execute(client, job["id"], merge=True, dry_run=False)
    assert stopped["state"] == "conflict" and not stopped["committed"], stopped
    assert snapshot(scratch_server, [TABLE]) == after

    document = {
        "version": 1,
        "rows": [
            {"table": TABLE, "key": {"id": 2}, "choice": "take_before_where_unchanged"},
            {"table": TABLE, "key": {"id": 3}, "choice": "take_before"},
        ],
        "default": "keep_now",
    }
    stored = client.put(url, json=document, headers=auth(ADMIN))
    assert stored.status_code == 200, stored.text
    assert client.get(url, headers=auth(VIEWER)).json() == document
    # storing one needs the admin role (it decides what a commit writes)
    assert client.put(url, json=document, headers=auth(OPERATOR)).status_code == 403

    done = _execute(client, job["id"], merge=True, dry_run=False)
    assert done["state"] == "succeeded" and done["committed"], done
    assert done["merge"] is True and done["resolutions"] == document
    assert _rows(scratch_server) == [
        (1, 1, 1, "later"),  # a and b restored, the later c kept
        (2, 99, 2, "y"),  # a changed since: kept; b unchanged since: restored
        (3, 3, 3, "z"),  # the re-taken key: the pre-incident row replaces the new one
        (4, 4, 4, "w"),
        (5, 5, 55, "new"),  # inserted, then updated since: kept as it is now
    ]
    by_key = {c["key"]["id"]: c for c in done["conflicts"]}
    assert sorted(by_key) == [2, 3, 5]
    assert {k: c["resolution"] for k, c in by_key.items()} == {
        2: "take_before_where_unchanged",
        3: "take_before",
        5: "keep_now",
    }
    a = next(c for c in by_key[2]["columns"] if c["name"] == "a")
    assert (a["before"], a["after"], a["now"], a["changed_since"]) == (2, 22, 99, True)
    assert by_key[3]["kind"] == "delete" and by_key[5]["kind"] == "insert"
    result = done["merge_result"]
    assert result["resolved"].get("keep_now") == 1 and result["resolved"].get("take_before") == 1
    assert result["resolved"].get("take_before_where_unchanged") == 1 and result["unresolved"] == 0
    assert result["kept_later_changes"] >= 1  # row 1's c
    listed = client.get(f"/api/jobs/{job['id']}/executions", headers=auth(VIEWER)).json()
    assert [e["merge"] for e in listed] == [False, True, True]


def test_the_body_s_document_wins_over_the_stored_one(make_client, scratch_server, late):
    rng, after = late
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng)
    url = f"/api/jobs/{job['id']}/resolutions"
    assert (
        client.put(url, json={"version": 1, "default": "take_before"}, headers=auth(ADMIN)).status_code == 200
    )
    kept = _execute(client, job["id"], merge=True, resolutions={"version": 1, "default": "keep_now"})
    assert kept["state"] == "succeeded" and not kept["committed"], kept
    assert {c["resolution"] for c in kept["conflicts"]} == {"keep_now"} and len(kept["conflicts"]) == 3
    assert kept["resolutions"] == {"version": 1, "default": "keep_now"}
    assert snapshot(scratch_server, [TABLE]) == after  # a dry run

    column = {"version": 1, "default": "keep_now", "rows": [
        {"table": TABLE, "key": {"id": 2}, "choice": "column", "columns": {"a": "take_before", "b": "keep_now"}}
    ]}  # fmt: skip
    done = _execute(client, job["id"], merge=True, dry_run=False, resolutions=column)
    assert done["state"] == "succeeded" and done["committed"], done
    assert _rows(scratch_server)[1] == (2, 2, 12, "y")  # a taken back over the later 99, b left at 12


def test_bad_documents_and_requests_are_one_line_422s(make_client, scratch_server, late):
    rng, _ = late
    client = make_client(servers=servers_json(scratch_server))
    job = _job(client, rng)
    url = f"/api/jobs/{job['id']}/resolutions"
    for bad in (
        {"version": 1, "default": "take_everything"},
        {"version": 1, "rows": [{"table": TABLE, "key": {"id": 2}, "choice": "maybe"}]},
        {
            "version": 1,
            "rows": [{"table": TABLE, "key": {"id": 2}, "choice": "column", "columns": {"a": "x"}}],
        },
    ):
        answer = client.put(url, json=bad, headers=auth(ADMIN))
        assert answer.status_code == 422, answer.text
        (error,) = answer.json()["detail"]
        assert "\n" not in error["msg"] and error["msg"], error
    assert client.get(url, headers=auth(VIEWER)).status_code == 404  # nothing stored

    executions = f"/api/jobs/{job['id']}/executions"
    bad_body = client.post(
        executions,
        json={"target": "scratch", "merge": True, "resolutions": {"version": 1, "default": "nope"}},
        headers=auth(OPERATOR),
    )
    assert bad_body.status_code == 422 and bad_body.json()["detail"][0]["loc"] == ["body", "resolutions"]
    alone = client.post(
        executions, json={"target": "scratch", "resolutions": {"version": 1}}, headers=auth(OPERATOR)
    )
    assert alone.status_code == 422 and "merge: true" in alone.json()["detail"][0]["msg"]

    # a merge runs on one connection, in one transaction
    parallel = _execute(client, job["id"], merge=True, dry_run=False, parallel=2)
    assert parallel["state"] == "refused" and "one connection" in parallel["error"], parallel
    per_transaction = _execute(client, job["id"], merge=True, dry_run=False, per_transaction=True)
    assert per_transaction["state"] == "refused" and "per-transaction" in per_transaction["error"]

    plain = _job(client, rng, net=False)
    refused = client.post(
        f"/api/jobs/{plain['id']}/executions",
        json={"target": "scratch", "merge": True},
        headers=auth(OPERATOR),
    )
    assert refused.status_code == 422 and "net" in refused.json()["detail"][0]["msg"]
