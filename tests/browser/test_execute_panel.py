"""The web form's tutorial, run for real (docs/tutorial-web.md): a bad DELETE undone from the browser.

Playwright drives Debian's Chromium against `mysql-rollback serve` and the scratch MariaDB: the day's
binlog file uploaded in the form, a first look at everything it holds (the transactions with their
statements, the row changes filtered and searched, an UPDATE column by column with ENUM values as
their names, one row's history), the incident's transaction ticked alone and re-generated, the
Execute panel (what will run, the conflict check followed live, a conflicting row three ways: before
and after the incident, now on the target), the typed target name, the commit and the applied badge.
The trap: an order deleted on purpose before the incident and another after it stay deleted. The screenshots it takes are the tutorial's: written into docs/images/ when
MYSQL_ROLLBACK_UPDATE_DOC_IMAGES=1, else into the test's temporary directory (a plain run leaves the
tree clean; the screenshots carry times and ids).
"""

from __future__ import annotations

import json
import os
import re

from tests.support import REPO
from tests.support.app import ADMIN

DOC_IMAGES = REPO / "docs" / "images"
ORDERS = [
    (1, "ada", "shipped", "12.50"),
    (2, "bob", "new", "7.00"),
    (3, "cy", "paid", "30.00"),
    (4, "dee", "new", "3.20"),
    (5, "eve", "paid", "99.90"),
    (6, "fay", "new", "15.00"),
]


def _rows(server):
    return server.query("SELECT id, customer, state, total FROM shop.orders ORDER BY id")


def test_undo_a_bad_delete_from_the_web_form(browser, service, scratch_server, tmp_path):
    from playwright.sync_api import expect

    images = DOC_IMAGES if os.environ.get("MYSQL_ROLLBACK_UPDATE_DOC_IMAGES") == "1" else tmp_path
    images.mkdir(parents=True, exist_ok=True)
    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS shop",
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(20), "
            "state ENUM('new','paid','shipped') NOT NULL, total DECIMAL(8,2), tags SET('gift','rush') NOT NULL)",
        ]
        + [f"INSERT INTO shop.orders VALUES ({i}, '{c}', '{s}', {t}, '')" for i, c, s, t in ORDERS]
    )
    # The day's binlog file: work, a legitimate DELETE, the incident (every 'new' order deleted
    # instead of one), then the application re-creating order 4 for another customer and another
    # legitimate DELETE. Restoring 4 would overwrite gus's order; restoring 3 or 5 would undo real work.
    day = scratch_server.run_sql(
        [
            "UPDATE shop.orders SET state = 'paid', total = 7.50, tags = 'gift,rush' WHERE id = 2",
            "UPDATE shop.orders SET state = 'new' WHERE id = 2",
            "DELETE FROM shop.orders WHERE id = 3",
            "DELETE FROM shop.orders WHERE state = 'new'",
            "INSERT INTO shop.orders VALUES (4, 'gus', 'new', 44.00, 'rush')",
            "DELETE FROM shop.orders WHERE id = 5",
        ],
        own_file=True,
    )
    binlog = day.files[0]

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(service.url + "/login")
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")

    # 1. A first look: the day's file uploaded, all of it, database shop.
    page.goto(service.url + "/jobs/new")
    page.set_input_files("#files", str(binlog))
    page.fill("#start_file", binlog.name)
    page.fill("#start_position", "4")
    page.fill("#databases", "shop")
    page.screenshot(path=str(images / "web-1-new-job.png"), full_page=True)
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    look_url = page.url
    expect(page.locator("#job-state")).to_have_text("succeeded", timeout=180_000)
    page.reload()
    # the change log itself (the API's JSON lines) names ENUM and SET values, as the page does
    job_id = look_url.rsplit("/", 1)[1]
    log = [json.loads(x) for x in service.request("GET", f"/api/jobs/{job_id}/changes").text.splitlines()]
    assert log[0]["before"]["state"] == "new" and log[0]["after"] == {
        "id": 2,
        "customer": "bob",
        "state": "paid",
        "total": "7.50",
        "tags": "gift,rush",
    }

    # 2. The transactions, newest first, each with its statement: the incident is one of five.
    transactions = page.locator("#pick-transactions tbody tr")
    expect(transactions).to_have_count(6)
    statements = [transactions.nth(n).locator("td.original").inner_text() for n in range(6)]
    assert statements == [
        "DELETE FROM shop.orders WHERE id = 5",
        "INSERT INTO shop.orders VALUES (4, 'gus', 'new', 44.00, 'rush')",
        "DELETE FROM shop.orders WHERE state = 'new'",
        "DELETE FROM shop.orders WHERE id = 3",
        "UPDATE shop.orders SET state = 'new' WHERE id = 2",
        "UPDATE shop.orders SET state = 'paid', total = 7.50, tags = 'gift,rush' WHERE id = 2",
    ]
    page.locator("#pick-transactions").screenshot(path=str(images / "web-2-transactions.png"))

    # The row changes: all eight, ENUMs by name; filtered to the DELETEs; searched.
    changes = page.locator("#changes .change")
    expect(changes).to_have_count(8, timeout=30_000)
    expect(page.locator("#changes-shown")).to_have_text("changes 1–8 of 8")
    first_update = page.locator('#changes .change[data-type="update"]').first
    expect(first_update.locator('tr.changed[data-column="state"] td.before')).to_have_text("new")
    expect(first_update.locator('tr.changed[data-column="state"] td.after')).to_have_text("paid")
    expect(first_update.locator('tr.changed[data-column="total"]')).to_have_count(1)
    expect(first_update.locator('tr.changed[data-column="tags"] td.after')).to_have_text("gift,rush")
    expect(first_update.locator('tr[data-column="customer"]')).not_to_have_class(re.compile("changed"))
    page.locator("#changes").screenshot(path=str(images / "web-3-row-changes.png"))
    page.select_option("#f-type", "delete")
    page.click("#apply-filters")
    expect(changes).to_have_count(5)
    for n in range(5):
        expect(changes.nth(n)).to_have_attribute("data-type", "delete")
    page.fill("#f-q", "dee")
    page.click("#apply-filters")
    expect(changes).to_have_count(1)
    expect(changes.first).to_contain_text("3.20")
    page.locator("#changes").screenshot(path=str(images / "web-4-filtered.png"))

    # One row's history: order 2 through the day, oldest first, ending deleted.
    page.select_option("#f-type", "")
    page.fill("#f-q", "bob")
    page.click("#apply-filters")
    page.locator('#changes .change[data-type="delete"] .history-link').click()
    versions = page.locator("#row-history tr.version")
    expect(versions).to_have_count(4)
    assert [versions.nth(n).get_attribute("data-type") for n in range(4)] == [
        "initial",
        "update",
        "update",
        "delete",
    ]
    expect(versions.nth(0)).to_contain_text("new")
    expect(versions.nth(1).locator("td.changed")).to_have_count(3)  # state, total and tags
    expect(versions.nth(3)).to_contain_text("deleted")
    page.screenshot(path=str(images / "web-5-row-history.png"), full_page=True)

    # 3. The incident's transaction alone: untick all, tick it, re-generate.
    page.goto(look_url)
    page.click("#picks-none")
    page.locator("#pick-transactions tbody tr", has_text="WHERE state = 'new'").locator("input").check()
    expect(page.locator("#picks-count")).to_have_text("1 of 6 ticked.")
    page.click("#picks-regenerate")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}#preview$"))
    assert page.url.split("#")[0] != look_url
    job_url = page.url.split("#")[0]
    expect(page.locator("#job-state")).to_have_text("succeeded", timeout=180_000)
    page.reload()
    expect(page.locator("#pick-transactions tbody tr")).to_have_count(1)
    expect(page.locator("#preview pre.sql")).to_contain_text(
        "original: DELETE FROM shop.orders WHERE state = 'new'"
    )
    expect(page.locator("#changes .change")).to_have_count(3, timeout=30_000)
    expect(page.locator("#dependencies")).to_contain_text("id=4")

    # 4. Execute: what will run, the conflict check (followed live), order 4 three ways.
    page.click("#execute")
    expect(page).to_have_url(re.compile(r"/execute/\d+$"))
    expect(page.locator("#what-will-run")).to_contain_text("shop.orders")
    expect(page.locator("#plan-counts")).to_contain_text("delete")
    expect(page.locator("#transaction-mode")).to_contain_text("all or nothing")
    # the check runs in the background: the panel fills in when it ends (slow on a loaded machine)
    expect(page.locator("#conflicts-found")).to_contain_text(
        "1 row(s) changed since the incident", timeout=180_000
    )
    view = page.locator(".three-way")
    expect(view).to_have_count(1)
    expect(view).to_contain_text("id=4")
    expect(view.locator('tr[data-column="customer"] td.before')).to_have_text("dee")
    expect(view.locator('tr[data-column="customer"] td.after')).to_have_text("no row")
    expect(view.locator('tr[data-column="customer"] td.now')).to_have_text("gus")
    expect(view.locator('tr[data-column="state"] td.before')).to_have_text("new")
    expect(page.locator("#side-effects-none")).to_be_visible()
    page.screenshot(path=str(images / "web-6-execute-panel.png"), full_page=True)

    # 5. The commit needs the target's name typed; skip the conflicting row, restore the others.
    expect(page.locator("#confirm")).to_be_disabled()
    _looks_disabled_and_cannot_be_pressed(page)
    page.fill("#confirm-target", "scratc")
    expect(page.locator("#confirm")).to_be_disabled()
    page.fill("#confirm-target", "scratch")
    expect(page.locator("#confirm")).to_be_enabled()
    page.check('input[name="on_conflict"][value="skip"]')
    page.click("#confirm")
    expect(page).to_have_url(re.compile(re.escape(job_url) + r"(#executions)?$"))
    commit = page.locator("tr.execution").last
    expect(commit).to_contain_text("commit")
    expect(commit.locator('[data-field="state"]')).to_have_text("succeeded", timeout=180_000)
    expect(commit.locator('[data-field="conflicts"]')).to_have_text(
        "1 conflict: row skipped, left as the target holds it (shop.orders id=4)"
    )
    expect(page.locator("#job-applied")).to_contain_text("applied by ada", timeout=180_000)
    page.screenshot(path=str(images / "web-7-applied.png"), full_page=True)
    # Orders 2 and 6 are back (2 as the incident found it), gus's order 4 is untouched, and the
    # orders deleted on purpose before and after the incident (3 and 5) stay deleted.
    assert [tuple(str(v) for v in r) for r in _rows(scratch_server)] == [
        ("1", "ada", "shipped", "12.50"),
        ("2", "bob", "new", "7.50"),
        ("4", "gus", "new", "44.00"),
        ("6", "fay", "new", "15.00"),
    ]
    page.goto(service.url + "/jobs")
    expect(page.locator("#jobs .applied").first).to_have_text("applied")
    page.close()


def _looks_disabled_and_cannot_be_pressed(page):
    """The disabled commit button is drawn faded with a not-allowed cursor, and a click does nothing."""
    confirm = page.locator("#confirm")
    style = confirm.evaluate("b => { const s = getComputedStyle(b); return [s.opacity, s.cursor]; }")
    assert float(style[0]) <= 0.5 and style[1] == "not-allowed", style
    before = page.url
    confirm.click(force=True)  # force: past Playwright's own wait for an enabled button
    page.wait_for_timeout(500)
    assert page.url == before
