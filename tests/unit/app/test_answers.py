"""GET /api/jobs and /api/jobs/{id} answer from serialised copies that any change of the job
database replaces: a commit of this process at once, one of another connection (another process)
within OTHERS_AGE."""

from __future__ import annotations

import sqlite3

from app.services import answers
from tests.support.app import VIEWER, auth, job_row

JOB_ID = "a" * 32


def _job():
    return job_row(id=JOB_ID, progress_total=100)


def test_answers_follow_every_change_of_the_job_database(make_client, tmp_path, monkeypatch):
    client = make_client(data_dir=tmp_path / "data", workers=1)
    services = client.app.state.services
    services.runner.stop()  # nothing takes the queued job: the test changes it itself
    with services.db.session() as session:
        session.add(_job())
        session.commit()

    def read() -> tuple[dict, dict]:
        one = client.get(f"/api/jobs/{JOB_ID}", headers=auth(VIEWER))
        listed = client.get("/api/jobs", headers=auth(VIEWER))
        assert one.status_code == listed.status_code == 200
        assert one.headers["content-type"] == "application/json"
        return one.json(), listed.json()

    job, listed = read()
    assert job["state"] == "queued" and listed["items"] == [job] and listed["total"] == 1
    cached = services.answers._cache[("job", JOB_ID)][2]
    assert read()[0] == job and services.answers._cache[("job", JOB_ID)][2] is cached  # not rebuilt

    services.runner.record(JOB_ID, progress_bytes=40)  # a commit of this process
    job, listed = read()
    assert job["progress"]["bytes"] == 40 and listed["items"][0]["progress"]["bytes"] == 40

    cached = services.answers._cache[("job", JOB_ID)][2]
    with sqlite3.connect(tmp_path / "data" / "jobs.sqlite3") as other:  # another process's connection
        other.execute("UPDATE jobs SET progress_bytes = 70 WHERE id = ?", (JOB_ID,))
    # another process's commits are taken at most every OTHERS_AGE seconds (an execution's progress)
    monkeypatch.setattr(answers, "OTHERS_AGE", 60.0)
    assert read()[0]["progress"]["bytes"] == 40 and services.answers._cache[("job", JOB_ID)][2] is cached
    monkeypatch.setattr(answers, "OTHERS_AGE", 0.0)
    job, listed = read()
    assert job["progress"]["bytes"] == 70 and listed["items"][0]["progress"]["bytes"] == 70
    # this process's commits at once, however recent the answer
    services.runner.record(JOB_ID, progress_bytes=80)
    assert read()[0]["progress"]["bytes"] == 80

    assert client.get(f"/api/jobs/{'b' * 32}", headers=auth(VIEWER)).status_code == 404
    assert client.get("/api/jobs?state=failed", headers=auth(VIEWER)).json()["items"] == []


def test_a_running_jobs_progress_replaces_its_answer_and_the_list_not_the_other_jobs(
    make_client, tmp_path, monkeypatch
):
    # the commit also moves data_version, as another connection's would: taken within OTHERS_AGE
    monkeypatch.setattr(answers, "OTHERS_AGE", 60.0)
    client = make_client(data_dir=tmp_path / "data", workers=1)
    services = client.app.state.services
    services.runner.stop()
    other = "b" * 32
    with services.db.session() as session:
        session.add_all([_job(), job_row(id=other, progress_total=100)])
        session.commit()
    for path in (f"/api/jobs/{JOB_ID}", f"/api/jobs/{other}", "/api/jobs"):
        assert client.get(path, headers=auth(VIEWER)).status_code == 200
    cached = services.answers._cache[("job", other)][2]
    services.runner.record(JOB_ID, progress_bytes=40)  # one job's row: its answer and the lists
    assert client.get(f"/api/jobs/{JOB_ID}", headers=auth(VIEWER)).json()["progress"]["bytes"] == 40
    listed = client.get("/api/jobs", headers=auth(VIEWER)).json()["items"]
    assert {j["id"]: j["progress"]["bytes"] for j in listed} == {JOB_ID: 40, other: 0}
    assert client.get(f"/api/jobs/{other}", headers=auth(VIEWER)).status_code == 200
    assert services.answers._cache[("job", other)][2] is cached  # not rebuilt


def test_the_fast_path_answers_what_the_routes_answer_and_passes_the_rest_on(make_client, tmp_path):
    client = make_client(data_dir=tmp_path / "data", workers=1)
    services = client.app.state.services
    services.runner.stop()
    with services.db.session() as session:
        session.add(_job())
        session.commit()
    fast = client.get("/api/jobs", headers=auth(VIEWER))  # no query: answered before routing
    routed = client.get("/api/jobs?limit=50&offset=0", headers=auth(VIEWER))  # through the route
    assert fast.status_code == routed.status_code == 200 and fast.content == routed.content
    for name in ("content-type", "cache-control", "x-content-type-options", "content-security-policy"):
        assert fast.headers[name] == routed.headers[name], name
    one = client.get(f"/api/jobs/{JOB_ID}", headers={**auth(VIEWER), "X-Request-ID": "poll-7"})
    assert one.status_code == 200 and one.json()["id"] == JOB_ID
    assert one.headers["x-content-type-options"] == "nosniff" and one.headers["x-request-id"] == "poll-7"
    # what it does not answer, the application does: unknown job, bad token, no token
    assert client.get(f"/api/jobs/{'b' * 32}", headers=auth(VIEWER)).status_code == 404
    wrong = client.get("/api/jobs", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert client.get(f"/api/jobs/{JOB_ID}").status_code == 401
