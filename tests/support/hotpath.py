"""Running the engine on one hot path or the other in the same process (rollback/base/hotpath.py)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from rollback.base import hotpath


def compiled_core() -> ModuleType:
    """The compiled core; an ImportError (a failing test, never a skip) when it was not built."""
    return importlib.import_module("rollback._speedups")


@contextmanager
def hot_path(core: Any) -> Iterator[None]:
    """Decoders and statement renderers prepared inside use `core` (None: the pure-Python path)."""
    saved = hotpath.CORE
    hotpath.CORE = core
    try:
        yield
    finally:
        hotpath.CORE = saved


def outcome(call: Any, *args: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", its type and message): what must agree between the two paths."""
    try:
        return "ok", call(*args)
    except Exception as exc:  # the two paths must fail alike, whatever the error
        return "error", (type(exc).__name__, str(exc))


def same_values(a: Any, b: Any) -> bool:
    """Equal, of the same types, and the same representation (tells -0.0 from 0.0, NaN from NaN)."""
    if isinstance(a, tuple | list):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(same_values(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and repr(a) == repr(b)
