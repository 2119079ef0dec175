"""The one escaper of the script's comment lines, and the check of user input that reaches them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollback.base.errors import RangeError
from rollback.base.render_text import check_plain, comment_line, comment_text, unsafe_character

HOSTILE = [
    "a\nDROP DATABASE x;",
    "a\rDROP DATABASE x;",
    "a\r\nb",
    "end */ start /* x",
    "nul\x00byte",
    "back\\slash \\! touch f \\G \\. file \\d ;; \\C latin1",
    "quotes ' \" `",
    "line\u2028sep\u2029para\u0085nel\x0bvt\x0cff\x1cfs",
    "\nDELIMITER ;;\n",
    "esc\x1b[2J bell\x07 del\x7f c1\x9b",
    "bidi \u202eevil\u202c \u2066x\u2069 zw\u200b bom\ufeff",
    "lone surrogate \udcff",
]
_ESCAPE = re.compile(r"\\(?:x([0-9a-f]{2})|u([0-9a-f]{4})|U([0-9a-f]{8})|(.))", re.S)
_SIMPLE = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t", "/": "/"}


def unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m[1] or m[2] or m[3], 16)) if m[4] is None else _SIMPLE[m[4]], text)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_stays_on_its_comment_line(text):
    line = comment_line(text)
    assert line.startswith("-- ") and len(line.splitlines()) == 1
    assert "*/" not in line and "\x00" not in line
    assert all(unsafe_character(c) is None for c in line)
    line.encode("utf-8")  # no lone surrogate left: the script can be written
    assert unescape(line[3:]) == text


@given(st.text(st.characters(blacklist_categories=())))
def test_any_text_escapes_to_one_printable_line_and_back(text):
    escaped = comment_text(text)
    assert len(("-- " + escaped).splitlines()) == 1 and "*/" not in escaped
    assert unsafe_character(escaped) is None
    assert unescape(escaped) == text  # nothing lost: distinct texts give distinct lines


def test_printable_text_is_left_readable():
    assert (
        comment_line("mysql-bin.000042 `shop`.`orders` é 😀 it's")
        == "-- mysql-bin.000042 `shop`.`orders` é 😀 it's"
    )
    assert comment_text("a\\b */ \n\t\x00\u2028") == "a\\\\b *\\/ \\n\\t\\x00\\u2028"


@pytest.mark.parametrize("value", ["a\nb", "t\x00", "x\u2028", "d\u202e", "\x1b[2J"])
def test_user_input_with_control_characters_is_refused(value):
    with pytest.raises(RangeError, match=r"--table .* contains a control character \(U\+[0-9A-F]{4}\)"):
        check_plain("--table", value)
    check_plain("--table", "shop.orders é */ \\ 'q'")  # printable text is fine
