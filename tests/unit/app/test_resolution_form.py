"""The three-way view's choices read into a resolutions document the engine accepts, and the stored
document shown back as the form's choices (app/web/resolution_form.py)."""

from __future__ import annotations

from app.web import resolution_form
from rollback import parse_resolutions

CONFLICTS = [
    {
        "table": "shop.t",
        "kind": "update",
        "key": {"id": 2},
        "columns": [{"name": "a", "changed_since": True}, {"name": "b", "changed_since": False}],
    },
    {"table": "shop.t", "kind": "delete", "key": {"id": 3}, "columns": [{"name": "id"}]},
    {"table": "shop.u", "kind": "update", "key": {"id": 1}, "columns": [{"name": "v"}]},
]


def test_the_form_becomes_a_document_the_engine_accepts_and_comes_back_as_the_same_choices():
    data = {
        "row-0": "column",
        "row-0-col-0": "take_before",
        "row-0-col-1": "keep_now",
        "row-1": "take_before",
        "row-2": "",  # as its table
        "table-1": "take_before_where_unchanged",
        "default": "keep_now",
    }
    document = resolution_form.document_from_form(data, CONFLICTS)
    assert document == {
        "version": 1,
        "default": "keep_now",
        "tables": {"shop.u": "take_before_where_unchanged"},
        "rows": [
            {
                "table": "shop.t",
                "key": {"id": 2},
                "choice": "column",
                "columns": {"a": "take_before", "b": "keep_now"},
            },
            {"table": "shop.t", "key": {"id": 3}, "choice": "take_before"},
        ],
    }
    resolutions = parse_resolutions(document)
    assert resolutions.choice_for("shop.u", {"id": 1}).choice == "take_before_where_unchanged"
    shown = resolution_form.view_rows(CONFLICTS, document)
    assert [r["choice"] for r in shown] == ["column", "take_before", ""]
    assert shown[0]["column_choices"] == ["take_before", "keep_now"]


def test_what_the_form_cannot_mean_is_left_out():
    # a per-column choice on a re-insert, an unknown choice, nothing for "all remaining"
    data = {"row-1": "column", "row-2": "drop_table", "default": ""}
    document = resolution_form.document_from_form(data, CONFLICTS)
    assert document == {"version": 1, "default": None, "tables": {}, "rows": []}
    parse_resolutions(document)


def test_a_resolution_in_a_word():
    assert resolution_form.resolution_name(None) == "unresolved"
    assert resolution_form.resolution_name("keep_now") == "keep_now"
    assert resolution_form.resolution_name({"choice": "column", "columns": {"a": "take_before"}}) == "column"
    conflicts = [{"resolution": "take_before"}, {"resolution": None}, {"resolution": {"choice": "column"}}]
    assert [
        resolution_form.resolution_name(c["resolution"]) for c in resolution_form.by_resolution(conflicts)
    ] == [
        "column",
        "take_before",
        "unresolved",
    ]
