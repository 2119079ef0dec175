"""Every value a page shows, its invisible characters made visible: control characters (NUL, ESC,
...), format characters (the bidi overrides U+202A-U+202E and isolates U+2066-U+2069, zero-width
characters) and line separators are written as \\x00, \\u202e. A table name or a row value from a
binlog can hold them, and a right-to-left override would make the page show something other than
what the script does. Line breaks and tabs stay (the script's preview is shown as it is)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from markupsafe import Markup

_CANDIDATE = re.compile(r"[^\x20-\x7e\n\t]")
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(value: Any) -> Any:
    """Jinja's finalize: applied to every {{ expression }} before it is escaped."""
    if isinstance(value, str):
        shown = _CANDIDATE.sub(_visible, value)
        return Markup(shown) if isinstance(value, Markup) else shown
    return value
