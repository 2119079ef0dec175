"""parse_resolutions (issue 28): the resolutions document of a merge, read and checked."""

from __future__ import annotations

import pytest

from rollback import CONFLICT_CHOICES, Resolutions, ResolutionsError, RollbackError, parse_resolutions


def test_the_contracts_example_is_read_with_its_precedence():
    found = parse_resolutions(
        {
            "version": 1,
            "default": "keep_now",
            "tables": {"db.t": "take_before"},
            "rows": [
                {"table": "db.t", "key": {"id": 5}, "choice": "take_before_where_unchanged"},
                {
                    "table": "db.t",
                    "key": {"id": 6},
                    "choice": "column",
                    "columns": {"a": "take_before", "b": "keep_now"},
                },
            ],
        }
    )
    assert isinstance(found, Resolutions)
    assert found.choice_for("db.t", {"id": 5}).choice == "take_before_where_unchanged"
    six = found.choice_for("DB.T", {"id": 6})
    assert six.choice == "column" and six.columns == {"a": "take_before", "b": "keep_now"}
    assert found.choice_for("db.t", {"id": 7}).choice == "take_before"  # its table's
    assert found.choice_for("db.other", {"id": 5}).choice == "keep_now"  # the default


def test_an_empty_document_leaves_every_conflict_unresolved():
    found = parse_resolutions({})
    assert found.choice_for("db.t", {"id": 1}) is None
    assert (
        parse_resolutions({"default": None, "rows": [], "tables": {}}).choice_for("db.t", {"id": 1}) is None
    )


def test_a_row_key_of_several_columns_matches_in_any_order():
    found = parse_resolutions({"rows": [{"table": "d.t", "key": {"a": 1, "b": "x"}, "choice": "keep_now"}]})
    assert found.choice_for("d.t", {"b": "x", "a": 1}).choice == "keep_now"
    assert found.choice_for("d.t", {"a": 1, "b": "y"}) is None


def test_the_choices():
    assert CONFLICT_CHOICES == ("keep_now", "take_before", "take_before_where_unchanged", "column")


@pytest.mark.parametrize(
    ("doc", "line"),
    [
        ([], "resolutions: the document: must be a JSON object, not list"),
        ({"versoin": 1}, "resolutions: the document: unknown key 'versoin'"),
        ({"version": 2}, "resolutions: version: 2 is not a version this engine reads (1)"),
        ({"default": "keep"}, "resolutions: default: unknown choice 'keep' (one of keep_now, take_before, "),
        ({"default": "column"}, "resolutions: default: 'column' is a choice for one row"),
        ({"tables": ["db.t"]}, "resolutions: tables: must be an object of db.table -> choice"),
        ({"tables": {"t": "keep_now"}}, "resolutions: tables['t']: a table is named db.table, not 't'"),
        ({"tables": {"db.t": 3}}, "resolutions: tables['db.t']: unknown choice 3"),
        ({"tables": {"db.t": "column"}}, "resolutions: tables['db.t']: 'column' is a choice for one row"),
        ({"rows": {"table": "db.t"}}, "resolutions: rows: must be a list of {table, key, choice}"),
        ({"rows": ["db.t"]}, "resolutions: rows[0]: must be an object {table, key, choice}"),
        (
            {"rows": [{"table": "db.t", "key": {"id": 1}, "choice": "keep_now", "why": "x"}]},
            "resolutions: rows[0]: unknown key 'why'",
        ),
        (
            {"rows": [{"key": {"id": 1}, "choice": "keep_now"}]},
            "resolutions: rows[0].table: a table is named db.table",
        ),
        (
            {"rows": [{"table": "db.t", "key": 1, "choice": "keep_now"}]},
            "resolutions: rows[0].key: must be the row's key",
        ),
        (
            {"rows": [{"table": "db.t", "key": {}, "choice": "keep_now"}]},
            "resolutions: rows[0].key: must be the row's key",
        ),
        ({"rows": [{"table": "db.t", "key": {"id": 1}}]}, "resolutions: rows[0].choice: unknown choice None"),
        (
            {"rows": [{"table": "db.t", "key": {"id": 1}, "choice": "column"}]},
            "resolutions: rows[0].columns: a 'column' choice needs an object of column -> choice",
        ),
        (
            {
                "rows": [
                    {
                        "table": "db.t",
                        "key": {"id": 1},
                        "choice": "column",
                        "columns": {"a": "take_before_where_unchanged"},
                    }
                ]
            },
            "resolutions: rows[0].columns['a']: unknown choice 'take_before_where_unchanged' (one of keep_now, take_before)",
        ),
        (
            {
                "rows": [
                    {"table": "db.t", "key": {"id": 1}, "choice": "keep_now", "columns": {"a": "keep_now"}}
                ]
            },
            "resolutions: rows[0].columns: only a 'column' choice takes columns (this one is 'keep_now')",
        ),
        (
            {
                "rows": [
                    {"table": "db.t", "key": {"id": 1}, "choice": "keep_now"},
                    {"table": "DB.t", "key": {"id": 1}, "choice": "take_before"},
                ]
            },
            "resolutions: rows[1]: names the same row as rows[0]",
        ),
    ],
)
def test_every_shape_error_is_one_line_naming_the_entry(doc, line):
    with pytest.raises(ResolutionsError) as raised:
        parse_resolutions(doc)
    message = raised.value.one_line()
    assert message.startswith(line) and "\n" not in message
    assert isinstance(raised.value, RollbackError)
