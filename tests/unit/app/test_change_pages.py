"""The job page's change log view (app.services.change_pages) on real change log files: filters,
search, UPDATE column diffs, a row's history across a key change, and paging that stays fast."""

from __future__ import annotations

import json
import time
from pathlib import Path

from app.services.change_pages import ChangeFilter, change_page, row_history
from rollback import record_json


def _record(n: int, kind: str, table: str, before=None, after=None, gtid: str | None = None) -> dict:
    database, _, name = table.partition(".")
    record = {
        "file": "mysql-bin.000001",
        "pos": 1000 + n,
        "end_pos": 1100 + n,
        "gtid": gtid,
        "timestamp": "2026-11-25T00:00:00Z",
        "server_id": 1,
        "thread_id": 7,
        "database": database,
        "table": name,
        "type": kind,
        "row": 0,
    }
    if before is not None:
        record["before"] = before
    if after is not None:
        record["after"] = after
    return record


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(record_json(r) + "\n" for r in records), encoding="utf-8")
    return path


def _log(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "changes.jsonl",
        [
            _record(
                1, "insert", "shop.orders", after={"id": 5, "state": "new", "total": "9.99"}, gtid="0-1-1"
            ),
            _record(
                2,
                "update",
                "shop.orders",
                {"id": 5, "state": "new", "total": "9.99"},
                {"id": 5, "state": "paid", "total": "9.99"},
                gtid="0-1-2",
            ),
            _record(3, "insert", "shop.items", after={"id": 5, "name": "Ölkanne"}, gtid="0-1-2"),
            _record(
                4,
                "update",
                "shop.orders",
                {"id": 5, "state": "paid", "total": "9.99"},
                {"id": 6, "state": "paid", "total": "10.50"},
                gtid="0-1-3",
            ),
            _record(
                5, "delete", "shop.orders", before={"id": 6, "state": "paid", "total": "10.50"}, gtid="0-1-4"
            ),
            _record(
                6, "delete", "shop.orders", before={"id": 7, "state": "new", "total": "1.00"}, gtid="0-1-4"
            ),
        ],
    )


def test_filters_by_table_type_and_transaction_and_search_combine(tmp_path):
    log = _log(tmp_path)
    assert [c.record["pos"] for c in change_page(log, ChangeFilter(), 1).changes] == [
        1001,
        1002,
        1003,
        1004,
        1005,
        1006,
    ]
    assert [c.record["pos"] for c in change_page(log, ChangeFilter(table="shop.items"), 1).changes] == [1003]
    assert [c.record["pos"] for c in change_page(log, ChangeFilter(type="delete"), 1).changes] == [1005, 1006]
    assert [c.record["pos"] for c in change_page(log, ChangeFilter(gtid="0-1-2"), 1).changes] == [1002, 1003]
    both = ChangeFilter(table="shop.orders", gtid="0-1-2")
    assert [c.record["pos"] for c in change_page(log, both, 1).changes] == [1002]
    # search is case-insensitive text anywhere in the change, non-ASCII included
    assert [c.record["pos"] for c in change_page(log, ChangeFilter(q="ölKANNE"), 1).changes] == [1003]
    assert change_page(log, ChangeFilter(table="shop.none"), 1).changes == []
    # a table name that is a prefix of another matches only itself
    assert change_page(log, ChangeFilter(table="shop.order"), 1).changes == []


def test_an_update_names_the_columns_it_changed(tmp_path):
    log = _log(tmp_path)
    first, moved = change_page(log, ChangeFilter(type="update"), 1).changes
    assert first.columns == ["id", "state", "total"] and first.changed == ["state"]
    assert moved.changed == ["id", "total"]
    assert change_page(log, ChangeFilter(type="insert"), 1).changes[0].changed == []


def test_pages_know_whether_another_follows(tmp_path):
    log = _log(tmp_path)
    one = change_page(log, ChangeFilter(table="shop.orders"), 1, size=2)
    two = change_page(log, ChangeFilter(table="shop.orders"), 2, size=2)
    three = change_page(log, ChangeFilter(table="shop.orders"), 3, size=2)
    assert [c.record["pos"] for c in one.changes + two.changes + three.changes] == [
        1001,
        1002,
        1004,
        1005,
        1006,
    ]
    assert (one.has_next, two.has_next, three.has_next) == (True, True, False)
    assert one.total is None  # a filtered view is not counted
    plain = change_page(log, ChangeFilter(), 2, size=4)
    assert (plain.total, plain.first, plain.has_next, len(plain.changes)) == (6, 5, False, 2)


def test_row_history_lists_every_version_oldest_first_and_follows_a_key_change(tmp_path):
    history = row_history(_log(tmp_path), "shop.orders", {"id": 5})
    kinds = [(v.change or {}).get("type", "initial") for v in history.versions]
    assert kinds == ["insert", "update", "update", "delete"]
    assert [v.image for v in history.versions][:3] == [
        {"id": 5, "state": "new", "total": "9.99"},
        {"id": 5, "state": "paid", "total": "9.99"},
        {"id": 6, "state": "paid", "total": "10.50"},
    ]
    assert history.versions[-1].image is None  # deleted
    assert history.versions[1].changed == ["state"]
    assert history.versions[2].changed == ["id", "total"]
    # a row whose first change is an UPDATE starts with its state before the range
    later = row_history(_log(tmp_path), "shop.orders", {"id": 6})
    assert [(v.change or {}).get("type", "initial") for v in later.versions] == [
        "initial",
        "update",
        "delete",
    ]
    assert row_history(_log(tmp_path), "shop.items", {"id": 6}).versions == []


def test_a_page_of_a_big_change_log_answers_fast(tmp_path):
    rows = 200_000
    records = (
        _record(
            n,
            "update" if n % 2 else "delete",
            f"shop.t{n % 5}",
            {"id": n, "v": n},
            {"id": n, "v": -n} if n % 2 else None,
        )
        for n in range(rows)
    )
    log = tmp_path / "big.jsonl"
    with open(log, "w", encoding="utf-8") as out:
        for r in records:
            out.write(record_json(r) + "\n")
    change_page(log, ChangeFilter(), 1)  # builds the line index once, as the job does when it ends
    started = time.perf_counter()
    last = change_page(log, ChangeFilter(), rows // 50)
    filtered = change_page(log, ChangeFilter(table="shop.t3", type="update"), 1)
    elapsed = time.perf_counter() - started
    assert last.total == rows and len(last.changes) == 50 and not last.has_next
    assert len(filtered.changes) == 50 and all(c.table == "shop.t3" for c in filtered.changes)
    assert elapsed < 1.0, f"{elapsed:.2f}s for the last page and a filtered first page"
    assert json.loads(json.dumps(filtered.changes[0].record))["type"] == "update"
