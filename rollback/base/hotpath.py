"""Which hot path decodes rows and renders statements: the compiled core or the pure-Python code.

The compiled core is `rollback/_speedups.pyx` (Cython, built by `pip install`); it runs plans that
the Python modules prepare once per table (`binlog/rowdecoder.py` for row images, `sql.py` for the
statements of full images) and produces exactly the bytes the pure-Python path produces; the
planner's walk over runs of rows events (`skip_run`, twin of `binlog/reader.py`'s) is there too. The
pure path is used when the extension cannot be imported, or when MYSQL_ROLLBACK_PURE_PYTHON=1.

`CORE` is read each time a decoder or a statement renderer is prepared (the caches are keyed by it)
and each time the planner walks a file, so a test can switch paths by setting it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_ENV = "MYSQL_ROLLBACK_PURE_PYTHON"


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        return None, f"pure Python ({PURE_ENV} is set)"
    try:
        core = importlib.import_module("rollback._speedups")
    except ImportError as exc:
        return None, f"pure Python (the compiled core is not importable: {exc})"
    return core, "compiled"


CORE, _WHY = _load()


def describe() -> str:
    """ "compiled", or "pure Python (why)": what `--version` and the service's /health print."""
    if CORE is None:
        return _WHY if _WHY != "compiled" else "pure Python (switched off in this process)"
    return "compiled"
