"""The job page's transaction list names each transaction's original statements (the script's
`-- original:` lines), so that the incident's can be told from the others before ticking."""

from __future__ import annotations

from app.services.picks import script_transactions

SCRIPT = """-- mysql-rollback header
-- transaction gtid=0-1-9 file=mysql-bin.000003 pos=900-1200 time=2026-11-25 10:41:00 UTC server_id=1 thread=7
-- original: DELETE FROM shop.orders WHERE id = 5
BEGIN;
INSERT INTO `shop`.`orders` (`id`) VALUES (5);
COMMIT;

-- transaction gtid=0-1-8 file=mysql-bin.000003 pos=500-900 time=2026-11-25 10:40:00 UTC server_id=1 thread=8
-- note: filters selected only part of this transaction's changes
-- original: DELETE FROM shop.orders WHERE state = 'new'
-- original: UPDATE shop.totals SET n = n - 3
BEGIN;
INSERT INTO `shop`.`orders` (`id`) VALUES (4);
COMMIT;

-- transaction gtid=0-1-7 file=mysql-bin.000003 pos=300-500 time=2026-11-25 10:39:00 UTC server_id=1 thread=7
BEGIN;
INSERT INTO `shop`.`orders` (`id`) VALUES (3);
COMMIT;
"""


def test_each_transaction_lists_its_original_statements(tmp_path):
    script = tmp_path / "rollback.render.sql"
    script.write_text(SCRIPT)
    listed = script_transactions(script)
    assert [(t["gtid"], t["statements"]) for t in listed] == [
        ("0-1-9", ["DELETE FROM shop.orders WHERE id = 5"]),
        ("0-1-8", ["DELETE FROM shop.orders WHERE state = 'new'", "UPDATE shop.totals SET n = n - 3"]),
        ("0-1-7", []),
    ]
