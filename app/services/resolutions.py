"""A job's resolutions document (how a merge execution resolves its conflicts: docs/execution.md),
stored as the job artifact `resolutions.json` beside its script, so that it goes with the job's
other files (retention, deletion). The engine validates it (rollback.parse_resolutions); an
execution copies the document it applies into its own record."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from app.models import Job
from rollback import Resolutions, parse_resolutions

FILE = "resolutions.json"


def check(doc: Any) -> None:
    """Raises a RollbackError (ResolutionsError) with one line naming the bad entry."""
    parse_resolutions(doc)


def parsed(doc: dict[str, Any]) -> Resolutions:
    """The engine's form of a document (checked)."""
    return parse_resolutions(doc)


def path_of(job: Job) -> Path:
    return Path(job.script_path or "").parent / FILE


def read(job: Job) -> dict[str, Any] | None:
    """The job's stored document, or None when it has none."""
    try:
        document: dict[str, Any] = json.loads(path_of(job).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return document


def store(job: Job, doc: dict[str, Any]) -> None:
    """Validated, then written whole (a reader sees the old document or the new one)."""
    check(doc)
    path = path_of(job)
    tmp = path.with_name(f"{FILE}.{os.getpid()}.{threading.get_ident()}.part")
    tmp.write_text(json.dumps(doc, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    tmp.replace(path)
