"""A DBA with a copy of a binlog file and a browser: the file uploaded through the new-job form, a job
on it, and its reverse SQL, applied to the server, brings the deleted row back."""

from __future__ import annotations

import re

from tests.support.app import OPERATOR
from tests.support.jobs import apply_script


def test_a_binlog_uploaded_in_the_form_gives_a_job_that_restores_the_row(
    browser, service, scratch_server, tmp_path
):
    from playwright.sync_api import expect

    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS upl",
            "CREATE DATABASE upl",
            "CREATE TABLE upl.items (id INT PRIMARY KEY, name VARCHAR(20))",
            "INSERT INTO upl.items VALUES (1, 'one'), (5, 'five'), (9, 'nine')",
        ]
    )
    incident = scratch_server.run_sql(["DELETE FROM upl.items WHERE id = 5"], own_file=True)
    binlog = incident.files[0]
    assert scratch_server.query("SELECT id FROM upl.items ORDER BY id") == [(1,), (9,)]
    not_a_binlog = tmp_path / "mysql-bin.notes"
    not_a_binlog.write_text("SHOW BINLOG EVENTS output, not the file\n")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(service.url + "/login")
    page.fill("#token", OPERATOR)
    page.click("button[type=submit]")
    page.goto(service.url + "/jobs/new")
    page.fill("#start_file", binlog.name)
    page.fill("#start_position", "4")
    page.fill("#tables", "upl.items")

    # The same checks as POST /api/uploads: a file without the binlog magic bytes is refused at its field.
    page.set_input_files("#files", str(not_a_binlog))
    page.click("#start")
    expect(page.locator("#field-files .error")).to_contain_text("mysql-bin.notes is not a binlog file")
    expect(page.locator("#files-stored")).to_have_count(0)

    page.set_input_files("#files", str(binlog))
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    expect(page.locator("#job-state")).to_have_text("succeeded", timeout=180_000)
    job_id = page.url.rsplit("/", 1)[1]
    job = service.request("GET", f"/api/jobs/{job_id}").json()
    assert job["source"] == "upload" and job["server"] is None
    upload = service.request("GET", f"/api/uploads/{job['upload']}").json()
    assert upload["files"] == [{"name": binlog.name, "size": binlog.stat().st_size}]
    page.reload()
    expect(page.locator("pre.sql")).to_contain_text("INSERT INTO `upl`.`items`")

    script = service.request("GET", f"/api/jobs/{job_id}/script").text
    assert script.count("INSERT INTO `upl`.`items`") == 1 and "'five'" in script
    apply_script(scratch_server, script.encode())  # as a DBA would: mariadb < script
    assert scratch_server.query("SELECT id, name FROM upl.items ORDER BY id") == [
        (1, "one"),
        (5, "five"),
        (9, "nine"),
    ]
    page.close()
