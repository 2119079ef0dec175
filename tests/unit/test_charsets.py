"""Collation ids -> character sets -> Python codecs, checked against the servers' collation tables
(MySQL 8.0 and MariaDB 10.11 `information_schema.COLLATIONS`, written out by hand here) and against
bytes whose meaning in each charset the MySQL manual states."""

from __future__ import annotations

import codecs

import pytest

from rollback.render.sql import string_literal
from rollback.schema.charsets import CHARSET_OF_COLLATION, PYTHON_CODEC, charset_of_collation


@pytest.mark.parametrize(
    ("collation_id", "charset"),
    [
        (1, "big5"),  # big5_chinese_ci
        (8, "latin1"),  # latin1_swedish_ci, the default of MariaDB and of MySQL 5.x
        (28, "gbk"),  # gbk_chinese_ci
        (33, "utf8mb3"),  # utf8mb3_general_ci (MySQL 5.x's `utf8`)
        (45, "utf8mb4"),  # utf8mb4_general_ci
        (46, "utf8mb4"),  # utf8mb4_bin
        (63, "binary"),
        (76, "utf8mb3"),  # utf8mb3_tolower_ci, MySQL 8 only
        (83, "utf8mb3"),  # utf8mb3_bin
        (192, "utf8mb3"),  # utf8mb3_unicode_ci
        (224, "utf8mb4"),  # utf8mb4_unicode_ci
        (248, "gb18030"),  # gb18030_chinese_ci, MySQL 5.7+
        (255, "utf8mb4"),  # utf8mb4_0900_ai_ci, MySQL 8's default
        (309, "utf8mb4"),  # utf8mb4_0900_bin
        (1025, "big5"),  # ids above 1024 are MariaDB 10.10+ collations of its own
    ],
)
def test_collation_ids_name_their_character_set(collation_id, charset):
    assert charset_of_collation(collation_id) == charset


def test_unknown_or_absent_collations_name_no_charset():
    assert charset_of_collation(None) is None
    assert charset_of_collation(2048) is None
    assert charset_of_collation(0) is None


def test_every_codec_named_is_one_python_has():
    for charset, codec in PYTHON_CODEC.items():
        if codec is not None:
            assert codecs.lookup(codec), charset


@pytest.mark.parametrize(
    ("charset", "data", "text"),
    [
        # MySQL's latin1 is Windows cp1252, not ISO 8859-1: 0x80 is the euro sign
        ("latin1", b"\x80", "€"),
        ("latin2", b"\xb1", "ą"),
        ("koi8r", b"\xc1", "а"),  # Cyrillic small a
        ("cp1251", b"\xcf\xf0\xe8", "При"),
        ("greek", b"\xe1", "α"),
        ("ucs2", b"\x00\xe9", "é"),  # UCS-2 is big-endian in the server
        ("utf16le", b"\xe9\x00", "é"),
        ("utf32", b"\x00\x01\xf6\x00", "😀"),
        ("sjis", b"\x82\xa0", "あ"),
        ("gb18030", b"\x81\x30\x81\x30", "\x80"),  # a four-byte sequence
    ],
)
def test_each_codec_reads_the_charsets_bytes_as_the_server_does(charset, data, text):
    assert data.decode(PYTHON_CODEC[charset]) == text


def test_charsets_without_a_python_codec_are_written_as_hex_with_their_introducer():
    without = sorted(set(CHARSET_OF_COLLATION.values()) - set(PYTHON_CODEC))
    assert without == ["armscii8", "dec8", "geostd8", "hp8", "keybcs2", "swe7"]
    for charset in without:
        assert string_literal(b"abc", charset) == f"_{charset} 0x616263"
