"""Joined UPDATEs (rollback/target/batches.py): a batch's reverse UPDATEs as one UPDATE joined to a VALUES
table of their rows' checked and new values. The server types each column of that table from all its
values, where a CASE or a check compares each literal alone: a row that differs from the image the binlog
left only where a looser comparison would not see it (case, trailing spaces, the last digit of a number
too long for a DOUBLE, a microsecond) must still be a conflict, and every type must come back exact."""

from __future__ import annotations

from typing import Any

import pytest

from rollback.base.errors import ConflictError
from rollback.target.execute import execute_plan
from tests.support.restore import incident_plan, snapshot

DB = "bx"
ROWS = 120
UPDATED = sum(1 for i in range(1, ROWS + 1) if i % 7 != 3)
TABLE = (
    f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, u BIGINT UNSIGNED, n DECIMAL(20,6), dt DATETIME(6), da DATE, "
    "tm TIME(3), ts TIMESTAMP(2) NULL, ci VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "
    "l1 VARCHAR(20) CHARACTER SET latin1, ch CHAR(6), e ENUM('a','b','C'), st SET('x','y','z'), j JSON, "
    "bl BLOB, y YEAR, nul INT NULL)"
)
FILL = (
    f"INSERT INTO {DB}.t SELECT seq, IF(seq % 7 = 0, 18446744073709551615 - seq, seq * 1000), "
    "IF(seq % 2, -1, 1) * (99999999999999.999999 - seq / 1000000), "
    "TIMESTAMPADD(MICROSECOND, seq * 1234567, '2024-02-29 23:59:59.999999'), "
    "DATE_ADD('1999-12-31', INTERVAL seq DAY), SEC_TO_TIME(seq * 3601.25 - 200000), "
    "IF(seq % 5 = 0, NULL, TIMESTAMPADD(SECOND, seq, '2021-03-04 05:06:07.89')), "
    "CONCAT(IF(seq % 2, 'Mixed Case ', 'lower '), seq), CONCAT(_latin1 x'E9', seq), CONCAT('c', seq % 10), "
    "ELT(1 + seq % 3, 'a', 'b', 'C'), IF(seq % 4, 'x,z', ''), JSON_OBJECT('k', seq, 's', 'it''s'), "
    f"UNHEX(CONCAT('00FF', HEX(seq))), 1901 + seq, IF(seq % 3, seq, NULL) FROM {DB}.seq_1_to_{ROWS}"
)
INCIDENT = (
    f"UPDATE {DB}.t SET u = u + 1, n = -n, dt = dt + INTERVAL 1 MICROSECOND, da = da + INTERVAL 1 DAY, "
    "tm = ADDTIME(tm, '00:00:00.001'), ts = IF(ts IS NULL, '2020-01-01 00:00:00.5', NULL), ci = UPPER(ci), "
    "l1 = CONCAT(l1, _latin1 x'C9'), ch = CONCAT(ch, ' '), e = IF(e = 'C', 'a', 'C'), st = 'y', "
    "j = JSON_SET(j, '$.k', 0), y = y + 1, nul = IF(nul IS NULL, id, NULL) WHERE id % 7 <> 3"
)


def _update_counts(into: list[tuple[int, int]]) -> Any:
    def status(conn: Any) -> None:
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Com_update', 'Com_update_multi')")
            seen = dict(cur.fetchall())
            into.append((int(seen["Com_update"]), int(seen["Com_update_multi"])))

    return status


@pytest.fixture
def typed(scratch_server, tmp_path) -> dict[str, Any]:
    data = incident_plan(scratch_server, tmp_path, DB, [TABLE, FILL], [INCIDENT])
    counts: list[tuple[int, int]] = []
    dry = execute_plan(data["plan"], scratch_server.dsn, inspect=_update_counts(counts))
    assert dry.rows_affected == UPDATED
    # every reverse UPDATE went joined: one UPDATE per batch, none on its own
    assert counts and counts[0][0] == 0 and 1 <= counts[0][1] <= 2, counts
    return data


def test_joined_updates_restore_every_type_exactly(scratch_server, typed):
    result = execute_plan(typed["plan"], scratch_server.dsn, commit=True, check_first=False)
    assert result.committed and result.rows_affected == UPDATED
    assert snapshot(scratch_server, typed["tables"]) == typed["before"]


@pytest.mark.parametrize(
    "later",
    [
        "ci = LOWER(ci)",  # equal under utf8mb4_general_ci
        "ci = CONCAT(ci, ' ')",  # equal under PAD SPACE
        "l1 = LOWER(l1)",  # É and é: equal under latin1_swedish_ci
        "u = u - 1",  # 18446744073709551609 and ...608: equal as DOUBLEs
        "n = n + 0.000001",  # 99999999999999.99x: equal as DOUBLEs
        "dt = dt - INTERVAL 1 MICROSECOND",
        "j = REPLACE(j, ': ', ':')",  # the same document
        "bl = CONCAT(bl, ' ')",
        "st = 'y,z'",
        "e = 'zzz'",  # no such member: the '' error value (index 0)
    ],
)
def test_a_row_that_differs_only_where_a_looser_comparison_is_blind_is_a_conflict(
    scratch_server, typed, later
):
    row = 14  # u is 18446744073709551601 + 1 after the incident
    scratch_server.run_sql(["SET SESSION sql_mode = ''", f"UPDATE {DB}.t SET {later} WHERE id = {row}"])
    changed = snapshot(scratch_server, typed["tables"])
    assert changed != typed["after"]
    with pytest.raises(ConflictError) as conflict:
        execute_plan(typed["plan"], scratch_server.dsn, commit=True, check_first=False)
    (named,) = conflict.value.result.conflicts
    assert named["statement"].endswith(f"WHERE `id`={row};") and "nothing was applied" in str(conflict.value)
    assert snapshot(scratch_server, typed["tables"]) == changed
