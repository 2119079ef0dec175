"""The `original:` comment lines of a transaction block: the first 1,000 characters of the statement with
whitespace runs collapsed, taken without collapsing the whole of a long statement."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rollback.pipeline.parts import ORIGINAL_CHARS, block_header, collapsed_prefix

SPACES = st.sampled_from([" ", "  ", "\n", "\r\n", "\t", "\x1c", "\u2028", "\u3000", "\x85", " \n\t "])
WORDS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(st.lists(st.one_of(SPACES, WORDS), max_size=60).map("".join), st.integers(0, 40))
def test_the_collapsed_prefix_is_the_prefix_of_the_collapsed_whole(text, size):
    assert collapsed_prefix(text, size) == " ".join(text.split())[:size]


def test_a_long_multi_row_insert_keeps_its_first_thousand_characters():
    values = ",\n    ".join(f"({i}, 'name {i}',   NULL)" for i in range(20_000))  # about 600 KB
    query = f"INSERT INTO t (id, name, note)\n  VALUES\n    {values}"
    tx = {"gtid": None, "timestamp": 0, "thread_id": None, "server_id": 1}
    header = block_header(tx, "f", 4, 99, False, [query])
    original = next(line for line in header.splitlines() if line.startswith("-- original: "))
    assert original == "-- original: " + " ".join(query.split())[:ORIGINAL_CHARS]
    assert len(original) == len("-- original: ") + ORIGINAL_CHARS
