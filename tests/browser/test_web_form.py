"""The DBA web form in a real browser: Playwright driving Debian's Chromium against `mysql-rollback serve`.

Covers: sign in, a validation error shown next to its field, starting a job, watching it finish,
the paged and highlighted preview, a dry run, and execute (conflict check, confirmation, commit);
side effects (a trigger, a MyISAM table) listed on the job page and accepted before they run.
Screenshots of the three pages land in test-artifacts/browser/. Every page runs under the
service's Content-Security-Policy, and any violation fails the test (tests/browser/conftest.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.app.conftest import ADMIN, servers_json
from tests.app.serviceproc import Service, service_env

pytestmark = pytest.mark.server
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"


@pytest.fixture(scope="module")
def service(scratch_server, tmp_path_factory):
    base = tmp_path_factory.mktemp("web")
    svc = Service(
        base / "data", service_env(base / "data", servers_json(scratch_server)), base / "service.log"
    )
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


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
    expect(page.locator("#no-conflicts")).to_be_visible()
    dialogs: list[str] = []

    def accept(dialog):
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    page.click("#confirm")
    expect(page).to_have_url(re.compile(re.escape(job_url) + r"(#executions)?$"))
    expect(page.locator("tr.execution").nth(1)).to_contain_text("commit")
    expect(page.locator("tr.execution").nth(1)).to_contain_text("succeeded")
    assert dialogs and "COMMIT" in dialogs[0]
    assert _checksum(scratch_server) == before

    # The job list shows the job and its state.
    page.goto(service.url + "/jobs")
    job_id = job_url.rsplit("/", 1)[1]
    expect(page.locator(f'tr[data-id="{job_id}"] [data-field="state"]')).to_have_text("succeeded")
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
    expect(page.locator("#target-side-effects")).to_contain_text("websafe.hits is a MyISAM table")
    expect(page.locator("#read-only-tables")).to_contain_text("websafe.hits")
    page.on("dialog", lambda dialog: dialog.accept())
    page.check(".accept-non-transactional")
    page.screenshot(path=str(ARTIFACTS / "execute-side-effects.png"), full_page=True)
    page.click("#confirm")
    expect(page.locator("tr.execution").nth(2)).to_contain_text("commit")
    expect(page.locator("tr.execution").nth(2)).to_contain_text("succeeded")
    assert scratch_server.query("SELECT n FROM websafe.hits") == [(0,)]
    assert scratch_server.query("SELECT id FROM websafe.acct ORDER BY id") == [(1,), (2,)]
    page.close()
