"""The web form's binlog upload (POST /jobs/new with files) holds to the limits and checks of
POST /api/uploads: who sends it checked before its body, its size counted as it arrives, the files'
names and magic bytes checked by the same code (app/api/routes/uploads.py: store_upload)."""

from __future__ import annotations

import re

from app.api.routes.uploads import MAGIC
from tests.support.app import OPERATOR, VIEWER

MULTIPART = {"content-type": "multipart/form-data; boundary=b"}


def _signed_in(client, token):
    response = client.post("/login", data={"token": token, "next": "/jobs"}, follow_redirects=False)
    assert response.status_code == 303
    return client


def _csrf(client) -> str:
    return re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/jobs/new").text).group(1)


def _uploads(tmp_path) -> list:
    uploads = tmp_path / "data" / "uploads"
    return list(uploads.iterdir()) if uploads.exists() else []


class _Endless:
    """A request body that counts what was read of it."""

    def __init__(self, total: int, head: bytes = b""):
        self.total = total
        self.head = head
        self.read = 0

    def __iter__(self):
        yield self.head
        chunk = b"x" * (1 << 16)
        while self.read < self.total:
            self.read += len(chunk)
            yield chunk


def test_the_form_takes_files_and_says_so(make_client):
    page = _signed_in(make_client(max_upload_bytes=8 << 20), OPERATOR).get("/jobs/new").text
    assert 'enctype="multipart/form-data"' in page
    assert 'type="file"' in page and 'name="files"' in page and "8 MiB at most" in page
    assert "through the API instead" not in page


def test_a_signed_out_or_viewer_upload_is_refused_before_its_body(make_client, tmp_path):
    client = make_client()
    body = _Endless(300 << 20)
    headers = {**MULTIPART, "content-length": str(300 << 20)}
    answer = client.post("/jobs/new", content=body, headers=headers, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/login?next=%2Fjobs%2Fnew"
    assert body.read <= 1 << 16  # TestClient reads the first chunk to start the request, no more
    viewer = _signed_in(make_client(data_dir=tmp_path / "data"), VIEWER)
    body = _Endless(300 << 20)
    answer = viewer.post("/jobs/new", content=body, headers=headers)
    assert answer.status_code == 403 and "operator role; you are signed in as" in answer.text
    assert "token" not in answer.text  # the form signs in by its session, not a token
    assert body.read <= 1 << 16
    assert _uploads(tmp_path) == []


def test_a_web_upload_over_the_limit_is_refused_by_its_length_or_cut_as_it_arrives(make_client, tmp_path):
    client = _signed_in(make_client(max_upload_bytes=1 << 20), OPERATOR)
    declared = _Endless(10 << 20)
    answer = client.post(
        "/jobs/new", content=declared, headers={**MULTIPART, "content-length": str(10 << 20)}
    )
    assert answer.status_code == 413 and "limit of 1048576 bytes" in answer.text
    # the web's own error page, with its stylesheet and the way back to the form
    assert '<link rel="stylesheet" href="/static/app.css">' in answer.text
    assert '<p class="error">' in answer.text and 'href="/jobs/new"' in answer.text
    assert declared.read <= 1 << 16
    head = b'--b\r\nContent-Disposition: form-data; name="files"; filename="mysql-bin.000001"\r\n\r\n' + MAGIC
    chunked = _Endless(64 << 20, head)  # no length: counted as it arrives, cut at the limit
    answer = client.post("/jobs/new", content=iter(chunked), headers=MULTIPART)
    assert answer.status_code == 413 and "limit of 1048576 bytes" in answer.text
    assert _uploads(tmp_path) == []


def test_files_that_are_not_binlogs_are_named_at_the_files_field(make_client, tmp_path):
    client = _signed_in(make_client(), OPERATOR)
    form = {"csrf": _csrf(client), "range_kind": "position", "start_file": "notes.txt", "start_position": "4"}
    answer = client.post("/jobs/new", data=form, files=[("files", ("notes.txt", b"hello"))])
    assert answer.status_code == 422
    assert re.search(r'id="field-files">.*notes.txt is not a binlog file', answer.text, re.S)
    named = client.post("/jobs/new", data=form, files=[("files", ("bad name\n", MAGIC))])
    assert named.status_code == 422 and "is not a binlog file name" in named.text
    assert _uploads(tmp_path) == []
    forged = client.post(
        "/jobs/new", data={**form, "csrf": "0"}, files=[("files", ("mysql-bin.000001", MAGIC))]
    )
    assert forged.status_code == 403 and _uploads(tmp_path) == []


def test_a_stored_upload_stays_with_a_form_shown_again(make_client, tmp_path):
    client = _signed_in(make_client(), OPERATOR)
    form = {"csrf": _csrf(client), "range_kind": "position", "start_position": "4"}  # no start file
    answer = client.post("/jobs/new", data=form, files=[("files", ("mysql-bin.000007", MAGIC + b"\0" * 60))])
    assert answer.status_code == 422 and "Uploaded: mysql-bin.000007" in answer.text
    upload = re.search(r'name="upload" value="([0-9a-f]{32})"', answer.text).group(1)
    assert [p.name for p in _uploads(tmp_path)] == [upload]
