"""rows_now: the conflict view's third column, rows read on the scratch MariaDB by key."""

from __future__ import annotations

from rollback import rows_now


def test_rows_are_read_by_primary_key_else_a_unique_key_else_every_column(scratch_server):
    scratch_server.run_sql(
        [
            "DROP DATABASE IF EXISTS rowsnow",
            "CREATE DATABASE rowsnow",
            "CREATE TABLE rowsnow.pk (id INT PRIMARY KEY, name VARCHAR(20), state ENUM('new','paid'), "
            "price DECIMAL(6,2), at DATETIME)",
            "CREATE TABLE rowsnow.uk (code VARBINARY(4) NOT NULL UNIQUE, n INT)",
            "CREATE TABLE rowsnow.nokey (a INT, b VARCHAR(5))",
            "INSERT INTO rowsnow.pk VALUES (1, 'Ölkanne', 'paid', 9.50, '2026-11-25 01:02:03')",
            "INSERT INTO rowsnow.uk VALUES (0x00ff, 7)",
            "INSERT INTO rowsnow.nokey VALUES (1, 'x'), (2, 'y')",
        ]
    )
    found = rows_now(
        scratch_server.dsn,
        [
            # the change log's image: other columns differ from today's row, the key finds it anyway
            ("rowsnow.pk", {"id": 1, "name": "old", "state": "new", "price": "1.00"}),
            ("rowsnow.pk", {"id": 2, "name": "gone"}),
            ("rowsnow.uk", {"code": {"hex": "00ff"}, "n": 0}),
            ("rowsnow.nokey", {"a": 2, "b": "y"}),
            ("rowsnow.nokey", {"a": 2}),
            ("rowsnow.missing", {"id": 1}),
        ],
    )
    pk, gone, uk, nokey, partial, missing = found
    assert pk.key == {"id": 1}
    assert pk.row == {
        "id": "1",
        "name": "Ölkanne",
        "state": "paid",
        "price": "9.50",
        "at": "2026-11-25 01:02:03",
    }
    assert gone.key == {"id": 2} and gone.row is None and gone.note == ""
    assert uk.key == {"code": {"hex": "00ff"}} and uk.row == {"code": {"hex": "00ff"}, "n": "7"}
    assert nokey.key == {"a": 2, "b": "y"} and nokey.row == {"a": "2", "b": "y"}
    assert partial.key == {"a": 2} and partial.row == {"a": "2", "b": "y"}  # what the image carries
    assert missing.row is None and missing.note == "the table does not exist on the target"
    scratch_server.query("DROP DATABASE rowsnow")
