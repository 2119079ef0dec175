"""Text that is not SQL in the script: every comment line goes through `comment_line`.

A script is run by the plain `mysql`/`mariadb` client, which reads it line by line: a line break
inside a comment's text would start a line the client executes, and a NUL byte stops it
("ASCII '\\0' appeared in the statement"). Table names, file names, filter values, GTIDs and the
original statements of the binlog all reach comment lines, and any of them can hold such bytes.
Backslash commands (\\! \\. \\d \\C ...) and `DELIMITER` are inert after `-- ` on the same line
(checked with the mariadb client), so one line that cannot break is enough.
"""

from __future__ import annotations

import re
import unicodedata

from rollback.base.errors import RangeError

# Characters that end a line somewhere (the client: \n; editors and viewers: \r, U+0085, U+2028/9, \v, \f),
# that the client refuses (NUL), or that change what a reader sees (bidi and other format controls):
# control (Cc), format (Cf), surrogate (Cs: unencodable), line and paragraph separators (Zl, Zp).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SPECIAL = re.compile(r"\*/|[^\x20-\x5b\x5d-\x7e]")  # `*/`, a backslash, anything but printable ASCII
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "*/": "*\\/"}


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    named = _NAMED.get(text)
    if named is not None:
        return named
    if unicodedata.category(text) not in _UNSAFE_CATEGORIES:
        return text  # printable non-ASCII text stays readable
    code = ord(text)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def comment_text(text: str) -> str:
    """The text, safe on one comment line: control, format and line-separator characters, backslashes and
    `*/` written as visible escapes (\\n, \\x00, \\u2028, \\\\, *\\/); everything else as it is."""
    return _SPECIAL.sub(_escape, text)


def comment_line(text: str) -> str:
    """`-- text` as one line of the script (without its line end)."""
    return "-- " + comment_text(text)


def unsafe_character(text: str) -> str | None:
    """The first character that `comment_text` would have to escape as unsafe (a control, format or
    line-separator character), or None: what user input naming databases, tables, types, GTIDs or
    datetimes must not contain."""
    for char in text:
        if (char < " " or char > "~") and unicodedata.category(char) in _UNSAFE_CATEGORIES:
            return char
    return None


def describe_character(char: str) -> str:
    """A character as a message names it: U+000A."""
    return f"U+{ord(char):04X}"


def check_plain(what: str, value: str) -> None:
    """RangeError when user input (a filter, a GTID set, a datetime) holds a control, format or
    line-separator character: such input names nothing real, and would have to be escaped on its
    comment line."""
    char = unsafe_character(value)
    if char is not None:
        raise RangeError(
            f"{what} {comment_text(value)} contains a control character ({describe_character(char)}); "
            "names, types, GTIDs and datetimes may not"
        )
