"""Security headers on every route of the app, the error responses Starlette makes, and the assets."""

from __future__ import annotations

import re

from fastapi.routing import APIRoute
from starlette.routing import Mount

from tests.app.conftest import ADMIN, auth


def _check(response, cacheable: bool = False) -> None:
    where = f"{response.request.method} {response.request.url.path} -> {response.status_code}"
    csp = response.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp, where
    script_src = re.search(r"script-src ([^;]*)", csp).group(1)
    assert script_src == "'self'", where  # no inline script, no eval, no other origin
    assert response.headers.get("x-content-type-options") == "nosniff", where
    assert response.headers.get("referrer-policy") == "no-referrer", where
    assert response.headers.get("x-frame-options") == "DENY", where
    cache = response.headers.get("cache-control")
    assert cache == ("no-cache" if cacheable else "no-store"), (where, cache)


def all_routes(routes):
    """Every route, through the routers FastAPI includes lazily (no prefixes are used here)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from all_routes(included.routes)
        elif not isinstance(route, Mount):
            yield route


def test_every_route_sends_the_security_headers(make_client):
    client = make_client()
    seen = 0
    for route in all_routes(client.app.routes):
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        for method in sorted(getattr(route, "methods", None) or {"GET"}):
            for headers in ({}, auth(ADMIN)):
                body = {"json": {}} if method == "POST" and isinstance(route, APIRoute) else {}
                response = client.request(method, path, headers=headers, follow_redirects=False, **body)
                assert response.status_code < 500, (method, path, response.text)
                _check(response)
                seen += 1
    assert seen >= 40
    for path in ("/static/app.js", "/static/app.css", "/docs-assets/swagger-ui-bundle.js"):
        response = client.get(path)
        assert response.status_code == 200
        _check(response, cacheable=True)


def test_errors_made_by_the_framework_carry_them_too(make_client):
    client = make_client()
    missing = client.get("/no/such/page")
    assert missing.status_code == 404
    _check(missing)
    wrong_method = client.delete("/api/jobs", headers=auth(ADMIN))
    assert wrong_method.status_code == 405
    _check(wrong_method)
    invalid = client.post("/api/jobs", headers=auth(ADMIN), json={"range": 5})
    assert invalid.status_code == 422
    _check(invalid)
    _check(client.get("/static/nothing.js"), cacheable=True)


def test_scripts_changes_and_pages_with_data_are_never_stored(make_client):
    client = make_client()
    client.post("/login", data={"token": ADMIN, "next": "/jobs"})
    for path in ("/jobs", "/api/jobs", "/api/jobs/x/script", "/api/jobs/x/changes", "/docs", "/openapi.json"):
        assert client.get(path).headers["cache-control"] == "no-store", path


def test_an_unhandled_error_is_a_500_with_the_headers_and_no_detail(make_client):
    from fastapi.testclient import TestClient

    app = make_client().app

    def boom() -> None:
        raise RuntimeError("/secret/path in the message")

    app.add_api_route("/boom", boom)
    response = TestClient(app, raise_server_exceptions=False).get("/boom")
    assert response.status_code == 500 and response.json() == {"detail": "internal error (RuntimeError)"}
    _check(response)
