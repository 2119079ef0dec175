"""Browser sessions live on the server: the cookie holds a signed random id, sign-out and a removed
token end them, and they expire."""

from __future__ import annotations

import base64
import time

from sqlalchemy import select

from app.api.deps import SESSION_COOKIE
from app.models import WebSession
from tests.app.conftest import ADMIN, OPERATOR, VIEWER


def _sign_in(client, token):
    response = client.post("/login", data={"token": token, "next": "/jobs"}, follow_redirects=False)
    assert response.status_code == 303
    return response


def _signed_in(client) -> bool:
    response = client.get("/jobs", follow_redirects=False)
    assert response.status_code in (200, 303)
    return response.status_code == 200


def test_the_cookie_holds_no_token_and_is_http_only_and_strict(make_client):
    client = make_client()
    header = _sign_in(client, OPERATOR).headers["set-cookie"]
    value = client.cookies[SESSION_COOKIE]
    assert "HttpOnly" in header and "SameSite=strict" in header and "Secure" not in header
    for form in (OPERATOR, base64.b64encode(OPERATOR.encode()).decode(), OPERATOR[:12]):
        assert form not in header
    assert len(value) > 40 and _signed_in(client)
    secure = make_client(https=True, data_dir=client.app.state.services.settings.data_dir / "s")
    assert "Secure" in _sign_in(secure, VIEWER).headers["set-cookie"]


def test_sign_out_revokes_the_session_even_for_a_kept_cookie(make_client):
    client = make_client()
    _sign_in(client, ADMIN)
    kept = client.cookies[SESSION_COOKIE]
    assert _signed_in(client)
    assert client.post("/logout", follow_redirects=False).status_code == 303
    client.cookies.set(SESSION_COOKIE, kept)
    response = client.get("/jobs", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/login")
    assert client.get("/api/jobs").status_code == 401


def test_a_forged_or_tampered_cookie_opens_nothing(make_client):
    client = make_client()
    _sign_in(client, ADMIN)
    value = client.cookies[SESSION_COOKIE]
    for forged in (value[:-2] + ("AA" if not value.endswith("AA") else "BB"), OPERATOR, "x"):
        client.cookies.set(SESSION_COOKIE, forged)
        assert not _signed_in(client)


def test_removing_a_token_revokes_its_sessions(make_client, tmp_path):
    data_dir = tmp_path / "data"
    first = make_client(data_dir=data_dir)
    _sign_in(first, OPERATOR)
    cookie = first.cookies[SESSION_COOKIE]
    _sign_in(first, VIEWER)
    viewer_cookie = first.cookies[SESSION_COOKIE]
    first.__exit__(None, None, None)
    # restarted with the operator's token removed: the same secret (kept in the data dir) signs
    second = make_client(data_dir=data_dir, api_tokens=f"vera:viewer:{VIEWER},ada:admin:{ADMIN}")
    second.cookies.set(SESSION_COOKIE, cookie)
    assert not _signed_in(second)
    second.cookies.set(SESSION_COOKIE, viewer_cookie)
    assert _signed_in(second)
    with second.app.state.services.db.session() as session:
        rows = session.scalars(select(WebSession)).all()
    assert sorted(r.revoked_at is None for r in rows) == [False, True]


def test_a_session_expires(make_client):
    client = make_client(session_hours=1.5 / 3600)
    _sign_in(client, ADMIN)
    assert _signed_in(client)
    time.sleep(2.0)  # the lifetime itself is what is tested
    assert not _signed_in(client)


def test_session_settings_are_checked_and_the_generated_secret_is_kept_private(make_client, tmp_path):
    import pytest
    from pydantic import ValidationError

    from app.core.config import Settings

    for bad in ({"session_secret": "short"}, {"session_hours": 0}, {"auth_failures_per_minute": -1}):
        with pytest.raises(ValidationError):
            Settings(**bad)
    assert "x" * 40 not in repr(Settings(session_secret="x" * 40, spark_secret="y" * 20))
    client = make_client(data_dir=tmp_path / "d")
    secret = tmp_path / "d" / "session-secret"
    assert secret.stat().st_mode & 0o777 == 0o600 and len(secret.read_text().strip()) >= 32
    _sign_in(client, ADMIN)
    assert secret.read_text().strip() not in client.cookies[SESSION_COOKIE]
