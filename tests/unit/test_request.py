"""The request's rules and parsers (rollback/request/spec.py): table-driven, no server, no JVM."""

from __future__ import annotations

import pytest

from rollback import DEFAULT_ENGINE, EngineKind, Filters, Options, RangeError, RangeSpec, parse_engine
from rollback.request.spec import (
    check_positions,
    check_request,
    check_server_range,
    check_window,
    parse_datetime,
)


@pytest.mark.parametrize(
    ("text", "epoch"),
    [
        ("2023-11-14 22:13:20", 1_700_000_000),
        ("2023-11-14T22:13:20Z", 1_700_000_000),
        ("2023-11-15 00:13:20+02:00", 1_700_000_000),
        (" 2023-11-14 22:13:20 ", 1_700_000_000),
    ],
)
def test_datetimes_without_an_offset_are_utc(text, epoch):
    assert parse_datetime(text) == epoch


def test_a_datetime_in_another_shape_is_a_range_error_naming_the_shape():
    with pytest.raises(RangeError, match=r"is not YYYY-MM-DD HH:MM:SS\[\+HH:MM\]"):
        parse_datetime("14/11/2023")


def test_the_range_parses_its_gtid_and_time_texts_once():
    rng = RangeSpec(["f"], gtid="0-1-5,0-1-7..0-1-9", start_datetime="2023-11-14 22:13:20")
    assert rng.gtid_filter is rng.gtid_filter
    assert rng.gtid_filter is not None and rng.gtid_filter.maria == [(0, 1, 5, 5), (0, 1, 7, 9)]
    assert rng.gtid_filter.selects("0-1-8") and not rng.gtid_filter.selects("0-1-6")
    assert rng.since == 1_700_000_000 and rng.until is None


def test_a_mysql_gtid_set_selects_its_transactions_tagged_or_not():
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    rng = RangeSpec(["f"], gtid=f"{uuid}:1-3,{uuid}:tag:7")
    flt = rng.gtid_filter
    assert flt is not None and flt.mysql is not None
    assert flt.selects(f"{uuid}:2") and flt.selects(f"{uuid}:tag:7")
    assert not flt.selects(f"{uuid}:4") and not flt.selects(None) and not flt.selects("garbage")


@pytest.mark.parametrize(
    ("rng", "options", "message"),
    [
        (RangeSpec(["f"]), Options(engine="gpu"), "engine 'gpu' is not one of auto, local, spark"),
        (RangeSpec(["f"]), Options(mode="undo"), "mode 'undo' is not one of"),
        (RangeSpec(["f"]), Options(changes_format="csv"), "change log format 'csv'"),
        (RangeSpec(["f"], gtid="0-1-9..0-1-5"), Options(), "ends before it starts"),
        (
            RangeSpec(["f"], start_datetime="2023-11-14 22:00:00", stop_datetime="2023-11-14 21:00:00"),
            Options(),
            "stop datetime is not after start datetime",
        ),
        (RangeSpec(["f"], gtid="0-1-5\n-- x"), Options(), "GTID set"),
    ],
)
def test_a_request_breaking_a_rule_is_refused_before_any_work(rng, options, message):
    with pytest.raises(RangeError, match=message):
        check_request(rng, Filters(), options)


def test_the_engine_has_one_default_and_options_take_its_name():
    assert DEFAULT_ENGINE is EngineKind.AUTO and Options().engine == EngineKind.AUTO
    options = Options(engine="local")
    check_request(RangeSpec(["f"]), Filters(), options)
    assert options.engine is EngineKind.LOCAL and parse_engine("spark") is EngineKind.SPARK


@pytest.mark.parametrize(
    ("start", "stop", "size", "message"),
    [
        (4, 200, 100, "stop position 200 is past the end of the file"),
        (50, 40, 100, "stop position 40 is before start position 50"),
    ],
)
def test_positions_within_a_file(start, stop, size, message):
    with pytest.raises(RangeError, match=message):
        check_positions("f", start, stop, size)
    check_positions("f", 4, size, size)


def test_a_time_window_must_not_stop_before_it_starts():
    check_window(None, 5.0)
    check_window(1.0, 2.0)
    with pytest.raises(RangeError):
        check_window(2.0, 2.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((None, 4, None, None, None, False), "needs the start file"),
        ((None, None, None, None, None, False), "needs a start file"),
        (("mysql-bin.000001", None, None, None, "0-1-5", False), "not by start file and GTIDs"),
    ],
)
def test_a_server_range_is_one_of_file_gtids_or_time(args, message):
    with pytest.raises(RangeError, match=message):
        check_server_range(*args)
    check_server_range(None, None, None, None, None, True)
