"""Integer encodings used inside event bodies."""

from __future__ import annotations

from rollback.base.errors import BinlogFormatError


def read_lenenc(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """MySQL's length-encoded integer (net_field_length): <251 is the value, 252/253/254 prefix 2/3/8 bytes."""
    try:
        first = buf[pos]
    except IndexError:
        raise BinlogFormatError(None, pos, "length-encoded integer past the end of the event") from None
    if first < 251:
        return first, pos + 1
    if first == 252:
        size = 2
    elif first == 253:
        size = 3
    elif first == 254:
        size = 8
    else:
        raise BinlogFormatError(None, pos, f"invalid length-encoded integer prefix 0x{first:02x}")
    if pos + 1 + size > len(buf):
        raise BinlogFormatError(None, pos, "length-encoded integer past the end of the event")
    return int.from_bytes(buf[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def read_varlen_unsigned(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """mysql::serialization variable-length unsigned integer (MySQL 8.3+ GTID_TAGGED and friends).

    The number of trailing 1-bits of the first byte, plus one, is the byte count n (9 when the first byte
    is 0xff); the value is the little-endian integer of those n bytes shifted right by n (by 8 for n = 9).
    """
    if pos >= len(buf):
        raise BinlogFormatError(None, pos, "variable-length integer past the end of the event")
    first = buf[pos]
    n = 1
    while n < 9 and first & (1 << (n - 1)):
        n += 1
    if pos + n > len(buf):
        raise BinlogFormatError(None, pos, "variable-length integer past the end of the event")
    raw = int.from_bytes(buf[pos : pos + n], "little")
    return raw >> (8 if n == 9 else n), pos + n


def read_varlen_signed(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed variant: zig-zag over the unsigned encoding (0, -1, 1, -2 ... map to 0, 1, 2, 3 ...)."""
    value, pos = read_varlen_unsigned(buf, pos)
    return (value >> 1) ^ -(value & 1), pos
