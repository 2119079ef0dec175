"""The DBA web form in a real browser: Playwright driving Debian's Chromium against `mysql-rollback serve`.

Covers: sign in, a validation error shown next to its field, starting a job, watching it finish,
the paged and highlighted preview, a dry run, and execute (the conflict check in the background, the
target's name typed, commit);
side effects (a trigger, a MyISAM table) listed on the job page and accepted before they run.
Screenshots of the three pages land in test-artifacts/browser/. Every page runs under the
service's Content-Security-Policy, and any violation fails the test (tests/browser/conftest.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.support import REPO
from tests.support.app import ADMIN

ARTIFACTS = REPO / "test-artifacts" / "browser"


def _checksum(server):
    return server.query("CHECKSUM TABLE web.items EXTENDED")[0][1]


def test_start_watch_preview_dry_run_and_execute_in_the_browser(browser, service, scratch_server):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS web",
            "CREATE DATABASE web",
            "CREATE TABLE web.items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(8,2))",
        ]
        + [f"INSERT INTO web.items VALUES ({i}, 'item {i}', {i}.99)" for i in range(1, 21)]
    )
    before = _checksum(scratch_server)
    done = scratch_server.run_sql(
        ["UPDATE web.items SET price = 0 WHERE id <= 10", "DELETE FROM web.items WHERE id > 15"]
        + [f"INSERT INTO web.items VALUES ({i}, 'it''s new', 1.00)" for i in range(100, 104)]
    )
    assert _checksum(scratch_server) != before

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(20_000)
    # Sign in (the job list sends us to the sign-in page first).
    page.goto(service.url + "/jobs")
    expect(page).to_have_url(re.compile(r"/login"))
    page.fill("#token", "wrong-token-wrong-token")
    page.click("button[type=submit]")
    expect(page.locator(".field.invalid .error")).to_contain_text("not valid")
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(r"/jobs$"))

    # A validation error, shown next to the field that caused it.
    page.click("text=Start a job")
    expect(page.locator("#tz")).to_contain_text("UTC")  # the server's time zone, asked by the page
    page.fill("#start_file", done.start_file)
    page.fill("#start_position", str(done.start_position))
    page.fill("#stop_position", "5")
    page.click("#start")
    error = page.locator("#field-stop_position .error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("stop_position")
    expect(page.locator("#field-start_position .error")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "new-job-with-error.png"), full_page=True)

    # Start the job for real and watch it finish.
    page.fill("#stop_file", done.stop_file)
    page.fill("#stop_position", str(done.stop_position))
    page.fill("#databases", "web")
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    job_url = page.url
    expect(page.locator("#job-state")).to_have_text("succeeded")

    # The preview: highlighted, with the reverse statements.
    preview = page.locator("#preview pre.sql")
    expect(preview).to_contain_text("INSERT INTO `web`.`items`")
    expect(preview).to_contain_text("DELETE FROM `web`.`items`")
    assert page.locator("#preview pre.sql span.k").count() > 10
    assert page.locator("#preview pre.sql span.c").count() > 3
    expect(page.locator("#download")).to_have_attribute("href", re.compile(r"/script\?download=true$"))
    with page.expect_download() as download:
        page.click("#download")
    assert "UPDATE `web`.`items`" in Path(download.value.path()).read_text()

    # Dry run: recorded, nothing changed.
    page.click("#dry-run")
    row = page.locator("tr.execution").first
    expect(row).to_contain_text("dry run")
    expect(row).to_contain_text("succeeded")
    assert _checksum(scratch_server) != before
    page.screenshot(path=str(ARTIFACTS / "job.png"), full_page=True)

    # Execute: the conflict check first, then a confirmation, then the commit.
    page.click("#execute")
    # the check runs in the background; the panel fills in when it ends (slow on a loaded machine)
    expect(page.locator("#no-conflicts")).to_be_visible(timeout=180_000)
    expect(page.locator("#confirm")).to_be_disabled()  # until the target's name is typed
    page.fill("#confirm-target", "scratch")
    page.click("#confirm")
    expect(page).to_have_url(re.compile(re.escape(job_url) + r"(#executions)?$"))
    expect(page.locator("tr.execution").nth(1)).to_contain_text("conflict check")
    expect(page.locator("tr.execution").nth(2)).to_contain_text("commit")
    expect(page.locator("tr.execution").nth(2)).to_contain_text("succeeded")
    assert _checksum(scratch_server) == before
    # The job is now applied: a badge on its page, and a second commit asks for an explicit "apply again".
    expect(page.locator("#job-applied")).to_contain_text("applied by")
    page.click("#execute")
    expect(page.locator("#already-applied")).to_be_visible(timeout=180_000)
    expect(page.locator("#reapply")).to_have_attribute("required", "")
    page.goto(job_url)

    # The job list shows the job and its state.
    page.goto(service.url + "/jobs")
    job_id = job_url.rsplit("/", 1)[1]
    expect(page.locator(f'tr[data-id="{job_id}"] [data-field="state"]')).to_have_text("succeeded")
    expect(page.locator(f'tr[data-id="{job_id}"] .applied')).to_have_text("applied")
    page.screenshot(path=str(ARTIFACTS / "jobs.png"), full_page=True)
    page.close()
    assert {p.name for p in ARTIFACTS.glob("*.png")} == {"new-job-with-error.png", "job.png", "jobs.png"}
    shutil.copy(service.log_path, ARTIFACTS / "service.log")


def test_the_execute_panel_shows_side_effects_and_asks_for_each_acceptance(browser, service, scratch_server):
    """A trigger and a MyISAM table: the job page lists them, the dry run needs its box ticked, and the
    confirmation asks for the non-transactional table before it commits."""
    from playwright.sync_api import expect

    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS websafe",
            "CREATE DATABASE websafe",
            "CREATE TABLE websafe.acct (id INT PRIMARY KEY, v INT)",
            "CREATE TABLE websafe.audit (n INT AUTO_INCREMENT PRIMARY KEY, id INT)",
            "CREATE TRIGGER websafe.acct_audit AFTER INSERT ON websafe.acct "
            "FOR EACH ROW INSERT INTO websafe.audit (id) VALUES (NEW.id)",
            "CREATE TABLE websafe.hits (id INT PRIMARY KEY, n INT) ENGINE=MyISAM",
            "INSERT INTO websafe.acct VALUES (1, 1), (2, 2)",
            "INSERT INTO websafe.hits VALUES (1, 0)",
        ]
    )
    done = scratch_server.run_sql(
        ["DELETE FROM websafe.acct WHERE id = 2", "UPDATE websafe.hits SET n = 5"], own_file=True
    )
    hits = scratch_server.query("SELECT n FROM websafe.hits")

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(20_000)
    page.goto(service.url + "/login")
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")
    page.goto(service.url + "/jobs/new")
    page.fill("#start_file", done.start_file)
    page.fill("#start_position", "4")
    page.fill("#databases", "websafe")
    page.click("#start")
    expect(page).to_have_url(re.compile(r"/jobs/[0-9a-f]{32}$"))
    expect(page.locator("#job-state")).to_have_text("succeeded", timeout=60_000)
    page.reload()
    effects = page.locator("#executions #side-effects")
    expect(effects).to_contain_text("trigger websafe.acct_audit (AFTER INSERT on websafe.acct) fires again")
    expect(effects).to_contain_text("websafe.hits is a MyISAM table")
    page.screenshot(path=str(ARTIFACTS / "job-side-effects.png"), full_page=True)

    # A dry run without letting the trigger fire is refused and recorded; with the box ticked it runs,
    # and only reads the MyISAM table.
    page.click("#dry-run")
    expect(page.locator("tr.execution").first).to_contain_text("refused")
    expect(page.locator("tr.execution").first).to_contain_text("--accept-triggers")
    page.check("#dry-accept-triggers")
    page.click("#dry-run")
    expect(page.locator("tr.execution").nth(1)).to_contain_text("succeeded")
    expect(page.locator("tr.execution").nth(1)).to_contain_text("checked by reads only: websafe.hits")
    assert scratch_server.query("SELECT n FROM websafe.hits") == hits

    # Execute: the confirmation lists the target's side effects and asks for the MyISAM table.
    page.check("#exec-accept-triggers")
    page.click("#execute")
    expect(page.locator("#target-side-effects")).to_contain_text(
        "websafe.hits is a MyISAM table", timeout=180_000
    )
    expect(page.locator("#read-only-tables")).to_contain_text("websafe.hits")
    page.check(".accept-non-transactional")
    page.fill("#confirm-target", "scratch")
    page.screenshot(path=str(ARTIFACTS / "execute-side-effects.png"), full_page=True)
    page.click("#confirm")
    expect(page.locator("tr.execution").nth(3)).to_contain_text("commit")
    expect(page.locator("tr.execution").nth(3)).to_contain_text("succeeded")
    assert scratch_server.query("SELECT n FROM websafe.hits") == [(0,)]
    assert scratch_server.query("SELECT id FROM websafe.acct ORDER BY id") == [(1,), (2,)]
    page.close()


def test_the_job_page_follows_an_execution_live(browser, service, scratch_server):
    """A dry run of 4,000 statements: the page shows it running with its progress moving (app.js polls
    the API), then its result, without the user reloading. The test holds the last row the dry run
    checks until the page has shown it running: the apply can finish 4,000 statements between two of
    the page's polls."""
    from playwright.sync_api import expect

    from tests.support.app import OPERATOR

    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS weblive",
            "CREATE DATABASE weblive",
            "CREATE TABLE weblive.t (id INT PRIMARY KEY)",
        ]
    )
    done = scratch_server.run_sql([f"INSERT INTO t VALUES ({n})" for n in range(1, 4001)], database="weblive")
    body = {
        "server": "scratch",
        "range": {
            "start_file": done.start_file,
            "start_position": done.start_position,
            "stop_file": done.stop_file,
            "stop_position": done.stop_position,
        },
    }
    job = service.wait(service.request("POST", "/api/jobs", OPERATOR, json=body).json()["id"], timeout=180)
    assert job["state"] == "succeeded" and job["statements"] == 4000, job

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(60_000)
    page.goto(service.url + "/login")
    page.fill("#token", ADMIN)
    page.click("button[type=submit]")
    page.goto(f"{service.url}/jobs/{job['id']}")
    # the reverse runs newest first: id 1 is the last row checked, its locking read waits for this one
    # (less than the execution's lock wait timeout, 10 s)
    holder = scratch_server.connect()
    try:
        with holder.cursor() as cur:
            cur.execute("BEGIN")
            cur.execute("SELECT id FROM weblive.t WHERE id = 1 FOR UPDATE")
        page.click("#dry-run")
        row = page.locator("tr.execution").first
        expect(row.locator('[data-field="state"]')).to_have_text("running")
        expect(row.locator('[data-field="cancel"]')).to_be_visible()
        expect(row.locator('[data-field="total"]')).to_have_text("4000")
        expect(row.locator('[data-field="done"]')).not_to_have_text(re.compile(r"^0$"))
    finally:
        holder.rollback()
        holder.close()
    # a 4000-statement dry run: minutes on a loaded 2-core machine
    expect(row.locator('[data-field="state"]')).to_have_text("succeeded", timeout=240_000)
    expect(row.locator('[data-field="cancel"]')).to_have_count(0)
    page.close()
    scratch_server.query("DROP DATABASE weblive")
