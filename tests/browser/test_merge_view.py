"""The incident found late, resolved in the browser (issue 28): a job with "one statement per row",
a merge conflict check, the three-way view's choices (per row, per column, per table, all remaining)
saved as the job's resolutions document, "Execute with merge", the report listing every conflicting
row by its resolution, and the table on the server as the choices said."""

from __future__ import annotations

import re

import pytest

from tests.support.app import ADMIN

DB = "mergeweb"
pytestmark = pytest.mark.both_ways_off("rows change after the incident on purpose: the merge keeps them")


def _rows(server):
    return server.query(f"SELECT id, a, b, c FROM {DB}.t ORDER BY id")


def test_resolve_conflicts_in_the_three_way_view_and_execute_with_merge(browser, service, scratch_server):
    from playwright.sync_api import expect

    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT, b INT, c VARCHAR(20))",
            f"CREATE TABLE {DB}.u (id INT PRIMARY KEY, v INT)",
            f"INSERT INTO {DB}.t VALUES (1, 1, 1, 'x'), (2, 2, 2, 'y'), (3, 3, 3, 'z'), (4, 4, 4, 'w')",
            f"INSERT INTO {DB}.u VALUES (1, 1), (2, 2)",
        ]
    )
    incident = scratch_server.run_sql(
        [
            f"UPDATE {DB}.t SET a = a + 10, b = b + 10",
            f"UPDATE {DB}.u SET v = v + 100",
        ],
        own_file=True,
    )
    scratch_server.run_sql(
        [
            f"UPDATE {DB}.t SET c = 'later' WHERE id = 1",  # another column: kept, no conflict
            f"UPDATE {DB}.t SET a = 92, b = 92 WHERE id = 2",  # both columns since: per column
            f"UPDATE {DB}.t SET a = 93 WHERE id = 3",  # a since, b not: pre-incident where unchanged
            f"UPDATE {DB}.t SET b = 94 WHERE id = 4",  # left to "all remaining": keep now
            f"UPDATE {DB}.u SET v = 7",  # both rows of u: the table's choice, take pre-incident
        ]
    )

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(service.url + "/login")
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")

    page.goto(service.url + "/jobs/new")
    page.select_option("#server", "scratch")
    page.fill("#start_file", incident.start_file)
    page.fill("#start_position", "4")
    page.fill("#stop_file", incident.stop_file)
    page.fill("#stop_position", str(incident.stop_position))
    page.fill("#databases", DB)
    page.check("#net")
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    job_url = page.url
    expect(page.locator("#job-state")).to_have_text("succeeded", timeout=180_000)
    page.reload()

    # the merge conflict check: five rows conflict (row 1's later change is to another column)
    page.check("#exec-merge")
    page.click("#execute")
    expect(page).to_have_url(re.compile(r"/execute/\d+$"))
    check_url = page.url
    expect(page.locator("#conflicts-found")).to_contain_text("5 row(s) changed since", timeout=180_000)
    rows = page.locator(".merge-conflict")
    expect(rows).to_have_count(5)
    expect(page.locator("#transaction-mode")).to_contain_text("with merge")
    row2 = page.locator(f'.merge-conflict[data-table="{DB}.t"]', has_text="id=2")
    expect(row2.locator('tr[data-column="a"] td.before')).to_have_text("2")
    expect(row2.locator('tr[data-column="a"] td.after')).to_have_text("12")
    expect(row2.locator('tr[data-column="a"] td.now')).to_have_text("92")
    expect(row2.locator('tr[data-column="a"]')).to_have_class(re.compile("changed"))

    # choices: row 2 per column (a back, b kept), row 3 where unchanged, table u all taken back,
    # the rest (row 4) kept as it is now
    row2.locator("select.row-choice").select_option("column")
    row2.locator('tr[data-column="a"] select.column-choice').select_option("take_before")
    row2.locator('tr[data-column="b"] select.column-choice').select_option("keep_now")
    row3 = page.locator(f'.merge-conflict[data-table="{DB}.t"]', has_text="id=3")
    row3.locator("select.row-choice").select_option("take_before_where_unchanged")
    page.locator(f'select.table-choice[data-table="{DB}.u"]').select_option("take_before")
    page.select_option("#resolution-default", "keep_now")
    page.click("#save-resolutions")
    expect(page).to_have_url(re.compile(re.escape(check_url) + "#resolutions-saved$"))
    expect(page.locator("#resolutions-stored")).to_be_visible()
    expect(row2.locator("select.row-choice")).to_have_value("column")
    stored = service.request("GET", "/api/jobs/" + job_url.rsplit("/", 1)[1] + "/resolutions").json()
    assert stored["default"] == "keep_now" and stored["tables"] == {f"{DB}.u": "take_before"}
    assert {(r["key"]["id"], r["choice"]) for r in stored["rows"]} == {
        (2, "column"),
        (3, "take_before_where_unchanged"),
    }

    # Execute with merge: the target's name typed, the commit, the report by resolution
    expect(page.locator("#confirm")).to_contain_text("Execute with merge")
    page.fill("#confirm-target", "scratch")
    page.click("#confirm")
    expect(page).to_have_url(re.compile(re.escape(job_url) + r"(#executions)?$"))
    commit = page.locator("tr.execution").last
    expect(commit.locator('[data-field="state"]')).to_have_text("succeeded", timeout=180_000)
    page.reload()
    expect(commit).to_contain_text("commit with merge")
    expect(commit.locator('[data-field="conflicts"]')).to_contain_text("5 conflicts: rows resolved")
    report = page.locator(".merge-report").last
    # row 1 restored with its later c kept; the five conflicts by their resolutions
    expect(report.locator(".merge-counts")).to_contain_text(
        "1 row(s) restored, 1 of them keeping later changes to other columns; 5 conflicting row(s)"
    )
    expect(report.locator("tbody tr")).to_have_count(5)
    expect(report.locator('tr[data-resolution="take_before"]')).to_have_count(2)
    expect(report.locator('tr[data-resolution="column"]')).to_contain_text("id=2")
    expect(report.locator('tr[data-resolution="take_before_where_unchanged"]')).to_contain_text("id=3")
    expect(report.locator('tr[data-resolution="keep_now"]')).to_contain_text("id=4")

    assert _rows(scratch_server) == [
        (1, 1, 1, "later"),
        (2, 2, 92, "y"),
        (3, 93, 3, "z"),
        (4, 14, 94, "w"),
    ]
    assert scratch_server.query(f"SELECT id, v FROM {DB}.u ORDER BY id") == [(1, 1), (2, 2)]
    page.close()
