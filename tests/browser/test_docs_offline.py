"""/docs renders in Chromium with every request beyond the service blocked, under the CSP."""

from __future__ import annotations

import pytest

from tests.app.serviceproc import Service, service_env


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    base = tmp_path_factory.mktemp("docs")
    svc = Service(base / "data", service_env(base / "data", "{}"), base / "service.log").start()
    try:
        yield svc
    finally:
        svc.stop()


def _offline_page(browser, service):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(20_000)
    outside: list[str] = []

    def only_the_service(route):
        if route.request.url.startswith(service.url + "/") or route.request.url.startswith("blob:"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_service)
    return page, outside


def test_swagger_ui_renders_every_operation_with_no_internet(browser, service):
    from playwright.sync_api import expect

    page, outside = _offline_page(browser, service)
    page.goto(service.url + "/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    assert page.locator(".opblock").count() >= 12
    expect(
        page.locator(".opblock-summary-path", has_text="/api/jobs/{job_id}/executions").first
    ).to_be_visible()
    expect(page.locator("button.authorize")).to_be_visible()  # the bearer scheme is declared
    assert outside == []
    page.close()


def test_the_violation_watch_sees_an_inline_script(browser, service):
    """The guard of every browser test can fail: an inline script is refused and reported."""
    page = browser.new_page()
    page.goto(service.url + "/login")
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
        " document.body.appendChild(s); }"
    )
    page.wait_for_timeout(200)
    ran = page.evaluate("() => window.ran === 1")
    seen = list(browser.violations)
    browser.violations.clear()
    page.close()
    assert not ran and seen and "script-src" in seen[0]
