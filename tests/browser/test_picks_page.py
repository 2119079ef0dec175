"""Precise selection in a real browser: the pick fields of the new-job form, the dependent rows on
the job page, and ticking transactions to re-generate the job (app.js pickTransactions), under the
service's Content-Security-Policy."""

from __future__ import annotations

import re

from tests.support.app import OPERATOR


def test_pick_fields_dependent_rows_and_ticked_regeneration(browser, service, scratch_server):
    from playwright.sync_api import expect

    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS webpicks",
            "CREATE DATABASE webpicks",
            "CREATE TABLE webpicks.t (id INT PRIMARY KEY, app CHAR(1), v INT)",
            "INSERT INTO webpicks.t VALUES (1, 'A', 1), (2, 'A', 2), (3, 'B', 3)",
        ]
    )
    statements = [
        "UPDATE webpicks.t SET v = v + 10 WHERE id IN (1, 2)",  # A
        "UPDATE webpicks.t SET v = v + 100 WHERE id IN (2, 3)",  # B: row 2 again
        "DELETE FROM webpicks.t WHERE id = 1",  # A
    ]
    done = scratch_server.run_sql(statements)
    gtids = []
    for k in range(len(statements)):
        domain, server_id, last = done.gtid_after.split("-")
        gtids.append(f"{domain}-{server_id}-{int(last) - len(statements) + 1 + k}")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(service.url + "/login")
    page.fill("#token", OPERATOR)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/jobs$"))

    page.click("text=Start a job")
    page.fill("#start_file", done.start_file)
    page.fill("#start_position", str(done.start_position))
    page.fill("#stop_file", done.stop_file)
    page.fill("#stop_position", str(done.stop_position))
    page.fill("#where", "v > (SELECT 1)")
    page.click("#start")
    expect(page.locator("#picks-error")).to_contain_text("SUBQUERY")
    page.fill("#where", "")
    page.fill("#exclude_gtid", gtids[1])
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    expect(page.locator("#job-state")).to_have_text("succeeded")
    expect(page.locator("#dependencies")).to_contain_text("id=2")
    expect(page.locator("#dependencies")).to_contain_text(gtids[1])
    expect(page.locator("#picks-used")).to_contain_text(f"exclude gtid: {gtids[1]}")

    boxes = page.locator('#picks-form input[name="tx"]')
    expect(boxes).to_have_count(2)
    expect(page.locator("#picks-count")).to_have_text("2 of 2 ticked.")
    page.click("#picks-none")
    expect(page.locator("#picks-count")).to_have_text("0 of 2 ticked.")
    expect(page.locator("#picks-regenerate")).to_be_disabled()
    boxes.nth(0).check()  # the newest: A's DELETE
    expect(page.locator("#picks-count")).to_have_text("1 of 2 ticked.")
    page.click("#picks-regenerate")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}#preview$"))
    expect(page.locator("#job-state")).to_have_text("succeeded")
    preview = page.locator("#preview pre.sql")
    expect(preview).to_contain_text(f"gtid={gtids[2]}")
    expect(preview).not_to_contain_text(f"gtid={gtids[0]}")
    expect(page.locator('#picks-form input[name="tx"]')).to_have_count(1)
    page.close()
