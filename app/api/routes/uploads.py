"""/api/uploads: binlog files for offline jobs (multipart), with a size limit for the whole upload."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, BinaryIO

from fastapi import APIRouter, File, HTTPException, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import SQLAlchemyError
from starlette.datastructures import UploadFile as FormFile

from app.api.deps import Operator, Services, ServicesDep, Viewer
from app.models import Upload, utcnow
from app.schemas import ERRORS, FILE_NAME, UploadOut
from app.services.jobs import new_id
from app.services.storage import database_problem, storage_problem

router = APIRouter(prefix="/api/uploads", tags=["uploads"])

MAGIC = b"\xfebin"
_NUMBERED = re.compile(r"^(?P<base>.+)\.(?P<number>\d+)$")


def _log_order(name: str) -> tuple[str, int, str]:
    match = _NUMBERED.match(name)
    return (match.group("base"), int(match.group("number")), name) if match else (name, -1, name)


def _store(source: BinaryIO, path: Path, budget: int) -> int:
    """Copy one file; -1 if it is not a binlog; 413 when it would exceed what is left of the limit."""
    source.seek(0)
    if source.read(4) != MAGIC:
        return -1
    size = 4
    with open(path, "wb") as out:
        out.write(MAGIC)
        while chunk := source.read(1 << 20):
            size += len(chunk)
            if size > budget:
                raise HTTPException(413, "the upload is larger than the limit")
            out.write(chunk)
    if size > budget:
        raise HTTPException(413, "the upload is larger than the limit")
    return size


def upload_out(upload: Upload) -> UploadOut:
    return UploadOut(
        id=upload.id, files=upload.files, total_bytes=upload.total_bytes, created_at=upload.created_at
    )


def _field_error(msg: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body", "files"), "msg": msg, "type": "value_error"}])


async def store_upload(services: Services, files: Sequence[FormFile], who: str) -> Upload:
    """Check the files' names, store them (each must be a binlog, all within the limit) and record the
    upload; HTTPException (413, 507) or RequestValidationError (names, not binlogs) say why not.
    POST /api/uploads and the web form's upload both store through here, behind app/api/upload_gate.py."""
    limit = services.settings.max_upload_bytes
    names = [f.filename or "" for f in files]
    for name in names:
        if not re.fullmatch(FILE_NAME, name):  # fullmatch: "$" alone lets a trailing newline through
            raise _field_error(f"{name!r} is not a binlog file name (letters, digits, '_', '.', '-')")
    if len(set(names)) != len(names):
        raise _field_error("two files have the same name")
    upload_id = new_id()
    directory = services.settings.uploads_dir / upload_id
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HTTPException(507, storage_problem(exc, "the upload") + "; nothing was stored") from None
    total = 0
    stored: list[dict[str, Any]] = []
    try:
        for item in files:
            name = item.filename or ""
            size = await run_in_threadpool(_store, item.file, directory / name, limit - total)
            if size < 0:
                raise _field_error(
                    f"{name} is not a binlog file (it does not start with the binlog magic bytes)"
                )
            total += size
            stored.append({"name": name, "size": size})
    except OSError as exc:
        shutil.rmtree(directory, ignore_errors=True)
        raise HTTPException(507, storage_problem(exc, "the upload") + "; nothing was stored") from None
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    stored.sort(key=lambda f: _log_order(f["name"]))
    upload = Upload(id=upload_id, created_by=who, created_at=utcnow(), files=stored, total_bytes=total)
    try:
        with services.db.session() as session:
            session.add(upload)
            session.commit()
    except SQLAlchemyError as exc:  # the files are removed: no upload without its record
        shutil.rmtree(directory, ignore_errors=True)
        raise HTTPException(507, database_problem(exc, "the upload") + "; nothing was stored") from None
    return upload


@router.post(
    "",
    status_code=201,
    response_model=UploadOut,
    responses={
        **ERRORS,
        413: {"description": "the upload is larger than the limit"},
        507: {"description": "the service cannot store the files (disk full, data dir not writable)"},
        422: {"description": "not binlog files"},
    },
)
async def create_upload(
    request: Request,
    services: ServicesDep,
    who: Operator,
    files: Annotated[list[UploadFile], File(description="binlog files (mysql-bin.000042, ...)")],
) -> UploadOut:
    """Store binlog files for a job (`"upload": id` in POST /api/jobs), in log order."""
    limit = services.settings.max_upload_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + (1 << 20):
        raise HTTPException(413, f"the upload is larger than the limit of {limit} bytes")
    return upload_out(await store_upload(services, files, who.name))


@router.get(
    "/{upload_id}", response_model=UploadOut, responses={**ERRORS, 404: {"description": "no such upload"}}
)
def read_upload(upload_id: str, services: ServicesDep, _: Viewer) -> UploadOut:
    with services.db.session() as session:
        upload = session.get(Upload, upload_id)
    if upload is None:
        raise HTTPException(404, f"no upload {upload_id!r}")
    return upload_out(upload)
