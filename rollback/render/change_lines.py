"""The change log's JSON lines of one table's rows events, built without a dict per row.

`record_json(record)` for every record of `batch_records(batch)` (rollback.render.records) gives the same
bytes; this builds them from prepared pieces instead: the record's head is encoded once per rows
event, and each table gets an image encoder generated for its columns (one expression per column:
integers, strings and NULL written directly, every other value through `records.image`'s own
rules). A row image with a column the binlog left out (MISSING) takes `records.image` whole.
The compiled core's ChangeImages runs the same choices in C (`encoded`), from `compiled_columns`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from typing import Any

from rollback.base import hotpath
from rollback.binlog.columns import MISSING
from rollback.binlog.decode import RowsBatch
from rollback.binlog.table_map import TableMap
from rollback.render.records import (
    Members,
    bytes_kinds,
    column_members,
    column_names,
    image,
    json_value,
    member_text,
    record_head,
)

_encode_string = json.encoder.encode_basestring  # the C encoder json.dumps(ensure_ascii=False) uses
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class ChangeLines:
    """The lines of one table map's rows events (with the schema's column names and members).
    With the compiled core (hotpath.CORE when it is made), `encoded` writes them in C."""

    __slots__ = ("_image", "_compiled")

    def __init__(
        self, tmap: TableMap, names: tuple[str, ...] | None = None, columns: Sequence[Any] | None = None
    ):
        cols = column_names(tmap, names)
        members = column_members(tmap, columns)
        kinds = bytes_kinds(tmap)

        def slow(row: tuple) -> str:
            return _dumps(image(row, tmap, cols, members, kinds))

        def value(index: int, v: Any) -> str:
            # records.image's rules for one value that is not MISSING
            return _dumps(json_value(v, tmap, index, members, kinds))

        self._image = _image_encoder(cols, members, kinds, value, slow)
        core = hotpath.CORE
        self._compiled = (
            None
            if core is None
            else core.ChangeImages(
                tuple(_key(index, name).encode("utf-8") for index, name in enumerate(cols)),
                compiled_columns(members, kinds, value),
                value,
                slow,
                MISSING,
            )
        )

    def encoded(self, batch: RowsBatch) -> bytes:
        """`lines` as UTF-8."""
        if self._compiled is None:
            return self.lines(batch).encode("utf-8")
        return self._compiled.lines(
            _dumps(record_head(batch))[:-1].encode("utf-8"), batch.kind, batch.rows, batch.first_row
        )

    def lines(self, batch: RowsBatch) -> str:
        """Every record of the rows event, one line each (a newline after each)."""
        head = _dumps(record_head(batch))[:-1]
        encode = self._image
        if batch.kind == "update":
            return "".join(
                f'{head},"row":{index},"before":{encode(row[0])},"after":{encode(row[1])}}}\n'
                for index, row in enumerate(batch.rows, batch.first_row)
            )
        key = "after" if batch.kind == "insert" else "before"
        return "".join(
            f'{head},"row":{index},"{key}":{encode(row)}}}\n'
            for index, row in enumerate(batch.rows, batch.first_row)
        )


def _hex(data: bytes) -> str:
    return f'{{"hex":"{data.hex()}"}}'


def _text(data: bytes) -> str:
    try:
        return _encode_string(data.decode("utf-8"))
    except UnicodeDecodeError:
        return _hex(data)


def _member(kind: str, names: tuple[str, ...], value: int) -> str:
    text = member_text(kind, names, value)
    return _encode_string(text) if isinstance(text, str) else int.__repr__(text)


def _decimal(value: Decimal) -> str:
    return f'"{value}"'  # a Decimal's text holds no character JSON escapes


_BYTES: dict[str, Callable[[bytes], str]] = {"hex": _hex, "text": _text}  # "json" takes records' rules


def _key(index: int, name: str) -> str:
    """A column's key in an image's JSON object, with the comma before it."""
    return ("" if index == 0 else ",") + _encode_string(name) + ":"


# Column kinds of the compiled core's ChangeImages (rollback/_speedups.pyx's C_* constants).
_C_TEXT, _C_HEX, _C_CALL, _C_ENUM, _C_SET = 0, 1, 2, 3, 4


def compiled_columns(
    members: Members, kinds: tuple[str, ...], value: Callable[[int, Any], str]
) -> tuple[tuple[int, Any], ...]:
    """Per column, (kind, what the core calls or looks up) for ChangeImages: the choices
    _image_encoder's expressions make, as data."""
    columns: list[tuple[int, Any]] = []
    for index, kind in enumerate(kinds):
        if index in members:
            member_kind, names = members[index]
            if member_kind == "enum":
                texts = ('""', *(_encode_string(m) for m in names))
                columns.append((_C_ENUM, tuple(t.encode("utf-8") for t in texts)))
            else:
                columns.append((_C_SET, partial(_member, member_kind, names)))
        elif kind == "text":
            columns.append((_C_TEXT, None))
        elif kind == "hex":
            columns.append((_C_HEX, None))
        else:
            columns.append((_C_CALL, partial(value, index)))
    return tuple(columns)


def _image_encoder(
    cols: tuple[str, ...],
    members: Members,
    kinds: tuple[str, ...],
    value: Callable[[int, Any], str],
    slow: Callable[[tuple], str],
) -> Callable[[tuple], str]:
    """A function of a row tuple -> its image's JSON object: a row with a column left out (MISSING)
    goes to `slow`, every other value written by one expression of its column."""
    pieces = []
    namespace: dict[str, Any] = {
        "_int": int.__repr__,
        "_str": _encode_string,
        "_dec": _decimal,
        "_value": value,
        "_text": _text,
        "_slow": slow,
        "MISSING": MISSING,
        "Decimal": Decimal,
    }
    for index, name in enumerate(cols):
        # the key's JSON text ("name":) as a variable: a name is not source text
        namespace[f"_k{index}"] = _key(index, name)
        namespace[f"_b{index}"] = _BYTES.get(kinds[index]) or partial(value, index)
        if index in members:  # ENUM / SET: the member's text, never the bare number
            kind, names = members[index]
            if kind == "enum":  # index 0 is the '' error value
                namespace[f"_m{index}"] = ('""', *(_encode_string(m) for m in names))
                pieces.append(
                    f"{{_k{index}}}{{_m{index}[v] if type(v := r[{index}]) is int and 0 <= v <= {len(names)} "
                    f"else _value({index}, v)}}"
                )
            else:
                namespace[f"_m{index}"] = partial(_member, kind, names)
                pieces.append(
                    f"{{_k{index}}}{{_m{index}(v) if type(v := r[{index}]) is int else _value({index}, v)}}"
                )
        elif kinds[index] == "text":  # ASCII bytes always decode: no try needed
            pieces.append(
                f"{{_k{index}}}{{_int(v) if (t := type(v := r[{index}])) is int "
                f"else _str(v.decode()) if t is bytes and v.isascii() else _text(v) if t is bytes "
                f"else _str(v) if t is str else 'null' if v is None "
                f"else _dec(v) if t is Decimal else _value({index}, v)}}"
            )
        else:
            # exact types only: a bool, a JsonText (a str) and the rest take records' rules
            pieces.append(
                f"{{_k{index}}}{{_int(v) if (t := type(v := r[{index}])) is int "
                f"else _str(v) if t is str else 'null' if v is None else _b{index}(v) if t is bytes "
                f"else _dec(v) if t is Decimal else _value({index}, v)}}"
            )
    body = "".join(pieces)
    source = (
        "def encode(r):\n"
        f"    if len(r) != {len(cols)} or MISSING in r:\n"
        "        return _slow(r)\n"
        f'    return f"{{{{{body}}}}}"\n'
    )
    exec(compile(source, "<change_lines>", "exec"), namespace)  # noqa: S102 - source built above, no input text
    encoder: Callable[[tuple], str] = namespace["encode"]
    return encoder


class ChangeLineCache:
    """ChangeLines per table definition: a binlog writes a table map before every transaction's
    rows events, so the encoder is kept per definition, not per table map."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[tuple, tuple[Any, ChangeLines]] = {}

    def lines(
        self, batch: RowsBatch, names: tuple[str, ...] | None = None, columns: Sequence[Any] | None = None
    ) -> str:
        return self._of(batch, names, columns).lines(batch)

    def encoded(
        self, batch: RowsBatch, names: tuple[str, ...] | None = None, columns: Sequence[Any] | None = None
    ) -> bytes:
        """`lines` as UTF-8 (written by the compiled core when there is one)."""
        return self._of(batch, names, columns).encoded(batch)

    def _of(
        self, batch: RowsBatch, names: tuple[str, ...] | None, columns: Sequence[Any] | None
    ) -> ChangeLines:
        tmap = batch.table
        key = (
            tmap.database,
            tmap.table,
            tmap.column_types,
            tmap.column_meta,
            tmap.charsets,
            tmap.column_names,
            tuple(tmap.enum_values.items()),
            tuple(tmap.set_values.items()),
            names,
            id(columns),  # the value below holds `columns`: its id cannot be reused while cached
            hotpath.CORE is None,
        )
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = (columns, ChangeLines(tmap, names, columns))
        return found[1]
