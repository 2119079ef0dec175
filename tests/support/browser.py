"""The `browser` fixture: Debian's Chromium driven by Playwright (never a downloaded browser),
watched for CSP violations: every page opened through it reports what the Content-Security-Policy
blocked (Chromium logs each refusal as a console error), and a test that saw one fails at its teardown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


class WatchedBrowser:
    def __init__(self, browser: Any):
        self._browser = browser
        self.violations: list[str] = []

    def new_page(self, **kwargs: Any) -> Any:
        page = self._browser.new_page(**kwargs)
        page.on("console", self._console)
        return page

    def _console(self, message: Any) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.violations.append(message.text)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import expect, sync_playwright

    # Assertions wait for what a loaded 2-core machine takes (a job, a dry run), not Playwright's 5 s.
    expect.set_options(timeout=60_000)

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: ./scripts/test installs Debian's chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield WatchedBrowser(browser)
        finally:
            browser.close()


@pytest.fixture(autouse=True)
def no_csp_violation(request):
    if "browser" not in request.fixturenames:
        yield
        return
    watched = request.getfixturevalue("browser")
    watched.violations.clear()
    yield
    assert watched.violations == [], "the Content-Security-Policy blocked something on a page"
