# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled hot path: row images -> values, values -> SQL statements, and the planner's walk over
runs of rows events (rollback/base/hotpath.py).

Nothing here decides anything: which kind of value a column holds and which literal renders it is
decided in Python (``rowdecoder.compiled_layout``, ``sql.compiled_statements``), once per table,
and handed over as small tuples. This module runs those plans over every row in C loops and must
produce exactly what the pure-Python path produces (tests/unit/test_hotpath_*.py compare bytes).

Decoding never reports an error itself: a row that does not fit, or a value the fast code does not
accept, raises ``Fallback`` and the caller decodes the event again with the pure-Python decoder,
which raises the located ``BinlogFormatError`` (or returns the same values: the rare cases below
that call back into ``columns.py`` are exactly its converters).
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.float cimport PyFloat_FromDouble
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp, memcpy, strlen, strpbrk
from libc.math cimport isfinite, fabs
from libc.float cimport FLT_MAX
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t *size) except NULL
    bint PyLong_CheckExact(object o)
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    long long PyLong_AsLongLongAndOverflow(object o, int *overflow) except? -1
    unsigned long long PyLong_AsUnsignedLongLong(object o) except? -1
    bint PyFloat_CheckExact(object o)
    double PyFloat_AS_DOUBLE(object o)
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) except NULL
    double PyOS_string_to_double(const char *s, char **endptr, object overflow_exception) except? -1.0
    int Py_DTSF_ADD_DOT_0
    object PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void *PyUnicode_DATA(object o)

from decimal import Decimal


class Fallback(ValueError):
    """The compiled decoder leaves this event to the pure-Python one."""


# Column kinds of a decode layout (rowdecoder.compiled_layout writes the same numbers).
DEF K_INT = 1          # arg: 1 = signed
DEF K_FLOAT = 2
DEF K_DOUBLE = 3
DEF K_YEAR = 4
DEF K_DATE = 5         # text made here
DEF K_DATETIME2 = 6    # arg: fsp; fn: columns.datetime2_text for what the inline path refuses
DEF K_TIMESTAMP2 = 7   # arg: fsp; fn: columns.timestamp2_text
DEF K_BE_CALL = 8      # fn(big-endian unsigned int, arg)
DEF K_LE_CALL = 9      # fn(little-endian int), arg: 1 = signed
DEF K_DECIMAL = 10     # extra: (precision, scale, group byte sizes, group digit counts)
DEF K_BE_UINT = 11     # BIT
DEF K_LE_UINT = 12     # ENUM, SET
DEF K_NULL_TYPE = 13
DEF K_STRING = 14      # arg: bytes of the length prefix
DEF K_UNSUPPORTED = 15
DEF K_TIME2 = 16       # arg: fsp; fn: columns.time2_text for what the inline path refuses

cdef object _decimal = Decimal
# exclusive limit of a stored fraction by its bytes: 1/100 s, 1/10000 s, microseconds
cdef uint64_t[4] _FRAC_LIMIT
_FRAC_LIMIT[0] = 1
_FRAC_LIMIT[1] = 100
_FRAC_LIMIT[2] = 10000
_FRAC_LIMIT[3] = 1000000
cdef uint64_t[19] _POW10
_POW10[0] = 1
for _i in range(1, 19):
    _POW10[_i] = _POW10[_i - 1] * 10


cdef class _Decimal:
    """A NEWDECIMAL column's digit groups, in C: (precision, scale, byte sizes, digit counts)."""

    cdef int precision, scale, ngroups
    cdef int sizes[16]
    cdef int digits[16]

    def __cinit__(self, tuple extra):
        cdef int k
        self.precision = extra[0]
        self.scale = extra[1]
        self.ngroups = len(extra[2])
        if self.ngroups > 16:
            raise ValueError("DECIMAL with more than 16 digit groups")
        for k in range(self.ngroups):
            self.sizes[k] = extra[2][k]
            self.digits[k] = extra[3][k]


@cython.final
cdef class Layout:
    """One row image's columns as C arrays: what ``compiled_layout`` describes."""

    cdef int ncols        # present columns
    cdef int width        # columns of the table
    cdef int *col
    cdef int *kind
    cdef int *size
    cdef int *arg
    cdef list fns
    cdef list extras
    cdef object missing

    def __cinit__(self, int width, tuple columns, object missing):
        cdef int n = len(columns)
        cdef int k
        self.ncols = n
        self.width = width
        self.missing = missing
        self.fns = []
        self.extras = []
        self.col = <int *>PyMem_Malloc(sizeof(int) * (n + 1))
        self.kind = <int *>PyMem_Malloc(sizeof(int) * (n + 1))
        self.size = <int *>PyMem_Malloc(sizeof(int) * (n + 1))
        self.arg = <int *>PyMem_Malloc(sizeof(int) * (n + 1))
        for k in range(n):
            c, kind, size, arg, fn, extra = columns[k]
            self.col[k] = c
            self.kind[k] = kind
            self.size[k] = size
            self.arg[k] = arg
            self.fns.append(fn)
            self.extras.append(_Decimal(extra) if kind == K_DECIMAL else extra)

    def __dealloc__(self):
        PyMem_Free(self.col)
        PyMem_Free(self.kind)
        PyMem_Free(self.size)
        PyMem_Free(self.arg)


cdef inline uint64_t _be(const unsigned char *p, int n) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(n):
        v = v << 8 | p[i]
    return v


cdef inline uint64_t _le(const unsigned char *p, int n) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(n - 1, -1, -1):
        v = v << 8 | p[i]
    return v


cdef inline int _put2(char *out, int v) noexcept:
    out[0] = <char>(48 + v // 10)
    out[1] = <char>(48 + v % 10)
    return 2


cdef inline int _put_digits(char *out, uint64_t v, int digits) noexcept:
    cdef int i
    for i in range(digits - 1, -1, -1):
        out[i] = <char>(48 + v % 10)
        v //= 10
    return digits


cdef inline int _put_date(char *out, int year, int month, int day) noexcept:
    _put_digits(out, year, 4)
    out[4] = b'-'
    _put2(out + 5, month)
    out[7] = b'-'
    _put2(out + 8, day)
    return 10


cdef inline int _put_hms(char *out, int hour, int minute, int second) noexcept:
    _put2(out, hour)
    out[2] = b':'
    _put2(out + 3, minute)
    out[5] = b':'
    _put2(out + 6, second)
    return 8


cdef inline object _ascii(char *text, int n):
    """The str of `n` ASCII characters (digits and punctuation made here): made directly, where
    PyUnicode_DecodeUTF8 would scan them first (two of these a row cost 400 instructions)."""
    cdef object s = PyUnicode_New(n, 127)
    memcpy(PyUnicode_DATA(s), text, n)
    return s


cdef object _datetime2(uint64_t r, int fsp, object fn):
    """DATETIME2 text as rowdecoder's inline statements make it; anything they leave to
    ``columns.datetime2_text`` goes there."""
    cdef char text[32]
    cdef int n = _datetime2_put(r, fsp, text)
    if n < 0:
        return fn(r, fsp)
    return _ascii(text, n)


cdef int _datetime2_put(uint64_t r, int fsp, char *text) except -2:
    """_datetime2's text at `text` (32 bytes), its length; -1 for a value left to the converter."""
    cdef int nbytes = (fsp + 1) // 2
    cdef int bits = nbytes * 8
    cdef uint64_t limit = 1
    cdef uint64_t frac = 0
    cdef uint64_t ip
    cdef int ym, year, month, day, hms, hour, minute, second, n
    if nbytes:
        limit = _FRAC_LIMIT[nbytes]
        frac = r & ((<uint64_t>1 << bits) - 1)
    if r < (<uint64_t>0x80 << (32 + bits)) or (nbytes and frac >= limit):
        return -1
    ip = (r >> bits) & ((<uint64_t>1 << 39) - 1)
    ym = <int>(ip >> 22)
    year = ym // 13
    month = ym % 13
    day = <int>(ip >> 17) & 31
    hms = <int>(ip & 131071)
    hour = hms >> 12
    minute = hms >> 6 & 63
    second = hms & 63
    if year > 9999 or month > 12 or day > 31 or hour > 23 or minute > 59 or second > 59:
        raise Fallback
    n = _put_date(text, year, month, day)
    text[n] = b' '
    n += 1
    n += _put_hms(text + n, hour, minute, second)
    if fsp:
        text[n] = b'.'
        n += 1
        n += _put_digits(text + n, frac // 10 if fsp & 1 else frac, fsp)
    return n


cdef int[7] _FRAC_UNIT_BY_FSP  # TIME2's stored fraction unit in microseconds, by fsp (columns._FRAC_UNIT)
_FRAC_UNIT_BY_FSP[:] = [0, 10000, 10000, 100, 100, 1, 1]
cdef uint64_t[7] _FRAC_DIV_BY_FSP  # usec // this = the fsp digits (columns._FRAC_DIV)
_FRAC_DIV_BY_FSP[:] = [1, 100000, 10000, 1000, 100, 10, 1]


cdef object _time2(uint64_t r, int fsp, object fn):
    """TIME2 text as ``columns.time2_text`` makes it (the packed in-memory TIME: ``hms << 24 |
    usec``, negated when negative; a negative value with a fraction borrows a second); anything
    out of range goes to that function, which says why."""
    cdef int nbytes = (fsp + 1) // 2
    cdef int bits = nbytes * 8
    cdef int64_t packed, intpart, frac
    cdef int64_t hms, usec
    cdef int hour, minute, second, n = 0
    cdef char text[32]
    if fsp > 6:
        return fn(r, fsp)
    if fsp >= 5:
        packed = <int64_t>r - <int64_t>0x800000000000
    else:
        intpart = <int64_t>(r >> bits) - 0x800000
        frac = <int64_t>(r & ((<uint64_t>1 << bits) - 1))
        if intpart < 0 and frac:
            intpart += 1
            frac -= <int64_t>1 << bits
        packed = intpart * (<int64_t>1 << 24) + frac * _FRAC_UNIT_BY_FSP[fsp]
    if packed < 0:
        text[0] = b'-'
        n = 1
        packed = -packed
    hms = packed >> 24
    usec = packed & 0xFFFFFF
    hour = <int>(hms >> 12 & 0x3FF)
    minute = <int>(hms >> 6 & 63)
    second = <int>(hms & 63)
    if minute > 59 or second > 59 or (fsp and usec >= 1000000):
        return fn(r, fsp)
    if hour < 10:
        text[n] = b'0'
        n += 1
    n += _put_uint(text + n, <uint64_t>hour)
    text[n] = b':'
    _put2(text + n + 1, minute)
    text[n + 3] = b':'
    _put2(text + n + 4, second)
    n += 6
    if fsp:
        text[n] = b'.'
        n += 1
        n += _put_digits(text + n, <uint64_t>usec // _FRAC_DIV_BY_FSP[fsp], fsp)
    return _ascii(text, n)


cdef void _civil(int64_t days, int *year, int *month, int *day) noexcept:
    """Days since 1970-01-01 -> the proleptic Gregorian date (what time.gmtime gives)."""
    cdef int64_t z = days + 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t y = yoe + era * 400
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    cdef int64_t d = doy - (153 * mp + 2) // 5 + 1
    cdef int64_t m = mp + 3 if mp < 10 else mp - 9
    year[0] = <int>(y + (m <= 2))
    month[0] = <int>m
    day[0] = <int>d


cdef object _timestamp2(uint64_t r, int fsp, object fn):
    cdef int nbytes = (fsp + 1) // 2
    cdef int bits = nbytes * 8
    cdef uint64_t limit = 1
    cdef uint64_t frac = 0
    cdef uint64_t s = r >> bits
    cdef int year, month, day, rest, n
    cdef char text[32]
    if nbytes:
        limit = _FRAC_LIMIT[nbytes]
        frac = r & ((<uint64_t>1 << bits) - 1)
    if s == 0 or (nbytes and frac >= limit):
        return fn(r, fsp)
    _civil(<int64_t>(s // 86400), &year, &month, &day)
    rest = <int>(s % 86400)
    n = _put_date(text, year, month, day)
    text[n] = b' '
    n += 1
    n += _put_hms(text + n, rest // 3600, rest % 3600 // 60, rest % 60)
    if fsp:
        text[n] = b'.'
        n += 1
        n += _put_digits(text + n, frac // 10 if fsp & 1 else frac, fsp)
    return _ascii(text, n)


cdef object _decimal_value(const unsigned char *p, _Decimal dec, bint as_text):
    """NEWDECIMAL as ``columns.decimal_converter`` makes it: Decimal('[-]<unscaled>E-<scale>');
    with ``as_text`` the text the statement renderer writes for that Decimal, ``format(value,
    "f")``, as a str (see decode_rows)."""
    cdef bint negative = False
    cdef char digits[72]
    cdef char text[80]
    cdef int nd = _decimal_digits(p, dec, digits, &negative), n = 0
    if as_text and negative and nd == 1 and digits[0] == b'0':
        # -0.00 (never stored by the server, which normalises it, but bytes can say it) is equal to
        # 0.00 in MySQL, and an UPDATE between the two changes nothing: as a Decimal beside the other
        # image's text it would compare unequal and make a statement. The event goes to the
        # generated decoder, whose values are all Decimals (the pure path's outcome).
        raise Fallback
    if as_text and _plain_decimal(negative, digits, nd, dec.scale):
        return _decimal_text(negative, digits, nd, dec.scale)
    if negative:
        text[n] = b'-'
        n += 1
    memcpy(text + n, digits, nd)
    n += nd
    if dec.scale:
        text[n] = b'E'
        text[n + 1] = b'-'
        n += 2
        n += _put_uint(text + n, dec.scale)
    return _decimal(_ascii(text, n))


cdef int _decimal_digits(const unsigned char *p, _Decimal dec, char *digits, bint *negative) except -1:
    """The unscaled digits of a NEWDECIMAL at `digits` (72 bytes), their count, and its sign: the
    groups' digits one after the other (each group but the leading ones zero-padded to its digit
    count): no integer wider than a group is needed, at any precision (up to 65 digits)."""
    cdef int k, nbytes, d
    cdef uint64_t g, top
    cdef int nd = 0
    negative[0] = False
    for k in range(dec.ngroups):
        nbytes = dec.sizes[k]
        d = dec.digits[k]
        g = _be(p, nbytes)
        p += nbytes
        if k == 0:
            top = <uint64_t>1 << (nbytes * 8 - 1)
            negative[0] = g < top
            if negative[0]:
                g ^= top - 1
            else:
                g -= top
        elif negative[0]:
            g ^= (<uint64_t>1 << (nbytes * 8)) - 1
        if g >= _POW10[d]:
            raise Fallback
        if nd:
            nd += _put_digits(digits + nd, g, d)
        elif g:
            nd = _put_uint(digits, g)
    if nd == 0:
        digits[0] = b'0'
        nd = 1
    return nd


cdef inline bint _plain_decimal(bint negative, const char *digits, int nd, int scale) noexcept:
    """Whether str() of Decimal('[-]<digits>E-<scale>') is its format(value, "f") text: not in
    exponent form (adjusted exponent from -6 on), and not a negative zero (-0.00 is a Decimal equal
    to 0.00 with another text; an UPDATE compares values). The change log writes str(), the
    statements format(): a text both agree on serves both."""
    return nd - 1 - scale >= -6 and not (negative and nd == 1 and digits[0] == b'0')


cdef object _decimal_text(bint negative, const char *digits, int nd, int scale):
    """format(Decimal('[-]<digits>E-<scale>'), "f") as a str (see _decimal_put)."""
    cdef char text[160]
    return _ascii(text, _decimal_put(negative, digits, nd, scale, text))


cdef int _decimal_put(bint negative, const char *digits, int nd, int scale, char *text) except -1:
    """format(Decimal('[-]<digits>E-<scale>'), "f") at `text` (160 bytes), its length: the digits
    with the point `scale` from the right, a 0 before a point with nothing left of it. A negative
    zero (-0.00) is a Decimal equal to 0.00 with another text: left to the Decimal path (an UPDATE
    compares values)."""
    cdef int n = 0, i
    if negative and nd == 1 and digits[0] == b'0':
        raise Fallback
    if negative:
        text[n] = b'-'
        n += 1
    if scale == 0:
        memcpy(text + n, digits, nd)
        return n + nd
    if nd <= scale:
        text[n] = b'0'
        text[n + 1] = b'.'
        n += 2
        for i in range(scale - nd):
            text[n] = b'0'
            n += 1
        memcpy(text + n, digits, nd)
        return n + nd
    memcpy(text + n, digits, nd - scale)
    n += nd - scale
    text[n] = b'.'
    n += 1
    memcpy(text + n, digits + nd - scale, scale)
    return n + scale


cdef char _DIGIT_PAIRS[200]  # "00" to "99", side by side
for _i in range(100):
    _DIGIT_PAIRS[2 * _i] = 48 + _i // 10
    _DIGIT_PAIRS[2 * _i + 1] = 48 + _i % 10


cdef inline int _put_uint(char *out, uint64_t v) noexcept:
    """The decimal digits of `v` at `out`; their count. Two digits a division."""
    cdef char tmp[24]
    cdef int n = 24, count
    while v >= 100:
        n -= 2
        memcpy(tmp + n, &_DIGIT_PAIRS[2 * (v % 100)], 2)
        v //= 100
    if v >= 10:
        n -= 2
        memcpy(tmp + n, &_DIGIT_PAIRS[2 * v], 2)
    else:
        n -= 1
        tmp[n] = <char>(48 + v)
    count = 24 - n
    memcpy(out, tmp + n, count)
    return count


cdef Py_ssize_t _row(Layout layout, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, object row,
                     bint decimal_text) except -1:
    """Decode one image at ``pos`` into the (MISSING-filled) tuple ``row``; the position after it."""
    cdef int n = layout.ncols
    cdef int nb = (n + 7) // 8
    cdef int k
    cdef object value
    if pos + nb > end:
        raise Fallback
    cdef const unsigned char *nulls = buf + pos
    pos += nb
    for k in range(n):
        if nulls[k >> 3] >> (k & 7) & 1:
            value = None
        else:
            value = _column(layout, k, buf, &pos, end, decimal_text)
        Py_INCREF(value)
        PyTuple_SET_ITEM(row, layout.col[k], value)
    return pos


cdef Py_ssize_t _columns_at(Layout layout, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end,
                            Py_ssize_t *at) except -1:
    """The position after the image at ``pos``, its bounds checked as _row checks them; where each
    present column's value starts in ``at`` (-1: NULL) unless it is NULL."""
    cdef int n = layout.ncols
    cdef int nb = (n + 7) // 8
    cdef int k, kind, arg
    cdef Py_ssize_t length
    if pos + nb > end:
        raise Fallback
    cdef const unsigned char *nulls = buf + pos
    pos += nb
    for k in range(n):
        if nulls[k >> 3] >> (k & 7) & 1:
            if at != NULL:
                at[k] = -1
            continue
        if at != NULL:
            at[k] = pos
        kind = layout.kind[k]
        if kind == K_STRING:
            arg = layout.arg[k]
            if pos + arg > end:
                raise Fallback
            length = <Py_ssize_t>_le(buf + pos, arg)
            pos += arg
            if length > end - pos:
                raise Fallback
            pos += length
        elif kind == K_UNSUPPORTED or pos + layout.size[k] > end:
            raise Fallback
        else:
            pos += layout.size[k]
    return pos


cdef int _check_column(Layout layout, int k, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end,
                       bint decimal_text) except -1:
    """Raise what _column raises for the value of column `k` at `pos`, without making the values
    that cannot fail (integers, strings, ENUM and SET members, YEAR)."""
    cdef int kind = layout.kind[k]
    cdef char scratch[72]
    cdef bint negative
    cdef int nd
    if kind == K_INT or kind == K_STRING or kind == K_LE_UINT or kind == K_BE_UINT or kind == K_YEAR:
        return 0
    if kind == K_DATETIME2:
        if _datetime2_put(_be(buf + pos, layout.size[k]), layout.arg[k], scratch) >= 0:
            return 0
    elif kind == K_DECIMAL:
        nd = _decimal_digits(buf + pos, <_Decimal>layout.extras[k], scratch, &negative)
        if decimal_text and negative and nd == 1 and scratch[0] == b'0':
            raise Fallback  # _decimal_value's negative zero
        return 0
    _column(layout, k, buf, &pos, end, decimal_text)
    return 0


cdef inline object _column(Layout layout, int k, const unsigned char *buf, Py_ssize_t *at, Py_ssize_t end,
                           bint decimal_text):
    """The value of present column ``k`` (not NULL) at ``at[0]``, which moves past it."""
    cdef int kind = layout.kind[k]
    cdef int size = layout.size[k]
    cdef int arg = layout.arg[k]
    cdef Py_ssize_t pos = at[0]
    cdef const unsigned char *p
    cdef uint64_t u
    cdef Py_ssize_t length
    cdef float f32
    cdef double f64
    cdef char text[16]
    cdef object value
    if kind == K_STRING:
        if pos + arg > end:
            raise Fallback
        length = <Py_ssize_t>_le(buf + pos, arg)
        pos += arg
        if length > end - pos:
            raise Fallback
        at[0] = pos + length
        return PyBytes_FromStringAndSize(<const char *>buf + pos, length)
    if kind == K_UNSUPPORTED or pos + size > end:
        raise Fallback
    p = buf + pos
    at[0] = pos + size
    if kind == K_INT:
        u = _le(p, size)
        if arg and size < 8 and u >> (size * 8 - 1):
            u |= ~((<uint64_t>1 << (size * 8)) - 1)
        if arg:
            return PyLong_FromLongLong(<int64_t>u)
        return PyLong_FromUnsignedLongLong(u)
    if kind == K_DATETIME2:
        return _datetime2(_be(p, size), arg, layout.fns[k])
    if kind == K_TIMESTAMP2:
        return _timestamp2(_be(p, size), arg, layout.fns[k])
    if kind == K_TIME2:
        return _time2(_be(p, size), arg, layout.fns[k])
    if kind == K_DECIMAL:
        return _decimal_value(p, <_Decimal>layout.extras[k], decimal_text)
    if kind == K_LE_UINT:
        return PyLong_FromUnsignedLongLong(_le(p, size))
    if kind == K_BE_UINT:
        return PyLong_FromUnsignedLongLong(_be(p, size))
    if kind == K_DATE:
        u = _le(p, 3)
        if (u >> 9) > 9999 or (u >> 5 & 15) > 12:
            raise Fallback
        return _ascii(text, _put_date(text, <int>(u >> 9), <int>(u >> 5 & 15), <int>(u & 31)))
    if kind == K_YEAR:
        return PyLong_FromLongLong(p[0] + 1900 if p[0] else 0)
    if kind == K_FLOAT:
        memcpy(&f32, p, 4)
        if not (f32 - f32 == 0):  # NaN or an infinity: the generated code refuses it
            raise Fallback
        return PyFloat_FromDouble(<double>f32)
    if kind == K_DOUBLE:
        memcpy(&f64, p, 8)
        if not (f64 - f64 == 0):
            raise Fallback
        return PyFloat_FromDouble(f64)
    if kind == K_BE_CALL:
        return layout.fns[k](_be(p, size), arg)
    if kind == K_LE_CALL:
        u = _le(p, size)
        if arg and size < 8 and u >> (size * 8 - 1):
            u |= ~((<uint64_t>1 << (size * 8)) - 1)
            return layout.fns[k](<int64_t>u)
        return layout.fns[k](u)
    if kind == K_NULL_TYPE:
        return None
    raise Fallback


cdef inline void _set(object row, int i, object value):
    Py_INCREF(value)
    PyTuple_SET_ITEM(row, i, value)


def decode_rows(Layout layout, bytes data, Py_ssize_t pos, Py_ssize_t end, bint decimal_text=False):
    """Every image in ``data[pos:end]`` (WRITE_ROWS / DELETE_ROWS bodies); Fallback if one does not fit.

    ``decimal_text``: DECIMAL values of up to 18 digits come as the str FullImages writes for them
    instead of Decimal objects (a third of the decoding's instructions), where that text is also
    the one str() gives (the change log's; see _plain_decimal): only for rows that go nowhere but
    to FullImages and ChangeImages (the partition decides), where equal texts mean equal values."""
    return decode_rows_part(layout, data, pos, end, -1, decimal_text)[0]


def decode_rows_part(Layout layout, bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t limit,
                     bint decimal_text=False):
    """(the first `limit` images of data[pos:end] (every one when `limit` < 0), the position after
    them): decode_rows a part at a time."""
    cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef list out = []
    cdef object row
    if end > PyBytes_GET_SIZE(data):
        end = PyBytes_GET_SIZE(data)
    while pos < end and limit != 0:
        row = _fresh(layout)
        pos = _row(layout, buf, pos, end, row, decimal_text)
        out.append(row)
        limit -= 1
    return out, pos


def decode_pairs(Layout before, Layout after, bytes data, Py_ssize_t pos, Py_ssize_t end,
                 bint decimal_text=False):
    """(before, after) image pairs of an UPDATE_ROWS body (``decimal_text``: as decode_rows)."""
    return decode_pairs_part(before, after, data, pos, end, -1, decimal_text)[0]


def decode_pairs_part(Layout before, Layout after, bytes data, Py_ssize_t pos, Py_ssize_t end,
                      Py_ssize_t limit, bint decimal_text=False):
    """decode_pairs a part at a time, as decode_rows_part."""
    cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef list out = []
    cdef object b, a
    if end > PyBytes_GET_SIZE(data):
        end = PyBytes_GET_SIZE(data)
    while pos < end and limit != 0:
        b = _fresh(before)
        pos = _row(before, buf, pos, end, b, decimal_text)
        a = _fresh(after)
        pos = _row(after, buf, pos, end, a, decimal_text)
        out.append((b, a))
        limit -= 1
    return out, pos


cdef object _fresh(Layout layout):
    """A tuple for one row: MISSING in the absent columns; the present ones are set by _row, which
    replaces (without releasing) the MISSING reference it finds: so only absent slots get one."""
    cdef object row = PyTuple_New(layout.width)
    cdef object missing = layout.missing
    cdef int i, k = 0
    cdef int n = layout.ncols
    for i in range(layout.width):
        if k < n and layout.col[k] == i:
            k += 1
            continue
        _set(row, i, missing)
    return row


# ---------------------------------------------------------------------------------------------
# Statements of full images (sql.FullImageStatements, compiled)
# ---------------------------------------------------------------------------------------------

# Literal kinds (sql.compiled_statements writes the same numbers).
DEF L_CALL = 0       # fn(value)
DEF L_STR = 1        # str(value)
DEF L_DECIMAL = 2    # format(value, "f")
DEF L_TEMPORAL = 3   # "'" + value + "'"
DEF L_TEXT = 4       # string_literal of a UTF-8 (or ASCII) charset; hex with the charset otherwise
DEF L_HEX = 5        # hex_literal(bytes(value))
DEF L_ASCII = 6      # string_literal of the ascii charset
DEF L_ENUM = 7       # sql.EnumLiteral: fn.literals[index], or the index
DEF L_FLOAT32 = 8    # sql.float32_literal: the shortest text that stores the same FLOAT
DEF L_DOUBLE = 9     # sql.double_literal: repr() with an exponent (a DOUBLE literal, not a DECIMAL)
DEF L_ASCII_OR_CALL = 10  # string_literal of a charset that reads ASCII as ASCII: ASCII text here, the rest fn(value)
DEF L_BIT = 11       # sql.BitLiteral: b'<binary digits, zero-filled to fn.width>'
DEF L_SET = 12       # sql.SetLiteral: the members of the mask (fn.quoted) joined and quoted

cdef const char *_HEX = b"0123456789abcdef"
cdef char _HEX_PAIRS[512]  # the two hex digits of every byte value, side by side
for _i in range(256):
    _HEX_PAIRS[2 * _i] = _HEX[_i >> 4]
    _HEX_PAIRS[2 * _i + 1] = _HEX[_i & 15]


@cython.final
cdef class _Out:
    """A growing UTF-8 buffer, read out as str."""

    cdef char *data
    cdef Py_ssize_t size
    cdef Py_ssize_t cap

    def __cinit__(self):
        self.cap = 1024
        self.size = 0
        self.data = <char *>PyMem_Malloc(self.cap)

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef inline int reserve(self, Py_ssize_t more) except -1:
        if self.size + more <= self.cap:
            return 0
        return self._grow(more)

    cdef int _grow(self, Py_ssize_t more) except -1:
        cdef Py_ssize_t cap = self.cap
        cdef char *grown
        while cap < self.size + more:
            cap *= 2
        grown = <char *>PyMem_Realloc(self.data, cap)
        if grown == NULL:
            raise MemoryError()
        self.data = grown
        self.cap = cap
        return 0

    cdef inline int raw(self, const char *text, Py_ssize_t n) except -1:
        self.reserve(n)
        memcpy(self.data + self.size, text, n)
        self.size += n
        return 0

    cdef inline int text(self, str s) except -1:
        cdef Py_ssize_t n
        cdef const char *p = PyUnicode_AsUTF8AndSize(s, &n)
        return self.raw(p, n)

    cdef str take(self):
        cdef str s = PyUnicode_DecodeUTF8(self.data, self.size, NULL)
        self.size = 0
        return s


cdef inline int _utf8_valid(const unsigned char *s, Py_ssize_t n) noexcept:
    """Well-formed UTF-8 (Unicode Table 3-7): what Python's strict decoder accepts."""
    cdef Py_ssize_t i = 0
    cdef unsigned char c, c1
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return 0
        elif c < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return 0
            i += 2
        elif c < 0xF0:
            if i + 2 >= n:
                return 0
            c1 = s[i + 1]
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 > 0x9F) or (c1 & 0xC0) != 0x80:
                return 0
            if (s[i + 2] & 0xC0) != 0x80:
                return 0
            i += 3
        elif c < 0xF5:
            if i + 3 >= n:
                return 0
            c1 = s[i + 1]
            if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 > 0x8F) or (c1 & 0xC0) != 0x80:
                return 0
            if (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
                return 0
            i += 4
        else:
            return 0
    return 1


cdef int _hex_digits(_Out out, const unsigned char *s, Py_ssize_t n) except -1:
    """The lower-case hex digits of `n` bytes appended to `out`, two a byte from _HEX_PAIRS."""
    cdef Py_ssize_t i
    cdef char *w
    out.reserve(2 * n)
    w = out.data + out.size
    for i in range(n):
        memcpy(w + 2 * i, &_HEX_PAIRS[2 * s[i]], 2)
    out.size += 2 * n
    return 0


cdef int _hex(_Out out, const unsigned char *s, Py_ssize_t n, bytes charset) except -1:
    """hex_literal(data, charset): `_cs 0x...`, or `_cs''` for no bytes."""
    out.raw(b"_", 1)
    out.raw(PyBytes_AS_STRING(charset), PyBytes_GET_SIZE(charset))
    if n == 0:
        out.raw(b"''", 2)
        return 0
    out.raw(b" 0x", 3)
    return _hex_digits(out, s, n)


cdef int _text(_Out out, object value, bint ascii_only, bytes charset) except -1:
    """string_literal(data, charset) for a charset whose Python codec is UTF-8 or ASCII: readable when
    valid and free of backslashes and control characters, quotes doubled; hex otherwise."""
    if not PyBytes_CheckExact(value):
        value = bytes(value)
    return _text_at(out, <const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value),
                    ascii_only, charset)


cdef int _text_at(_Out out, const unsigned char *s, Py_ssize_t n, bint ascii_only, bytes charset) except -1:
    """_text of the `n` bytes at `s`."""
    cdef Py_ssize_t i, quotes = 0
    cdef unsigned char c
    cdef char *w
    for i in range(n):
        c = s[i]
        if c < 0x20 or c == 0x5C or c == 0x7F or (ascii_only and c >= 0x80):
            return _hex(out, s, n, charset)
        if c == 0x27:
            quotes += 1
    if not _utf8_valid(s, n):
        return _hex(out, s, n, charset)
    out.reserve(n + quotes + 2)
    w = out.data + out.size
    w[0] = b"'"
    w += 1
    for i in range(n):
        w[0] = s[i]
        w += 1
        if s[i] == 0x27:
            w[0] = b"'"
            w += 1
    w[0] = b"'"
    out.size += n + quotes + 2
    return 0


cdef bytes _BINARY = b"binary"


cdef inline bint _is_ascii(const unsigned char *s, Py_ssize_t n) noexcept:
    cdef Py_ssize_t i
    for i in range(n):
        if s[i] >= 0x80:
            return False
    return True


cdef int _bit_literal(_Out out, object fn, object value) except -1:
    """sql.BitLiteral: b'<digits>' with at least fn.width digits (a value needing more keeps them)."""
    cdef uint64_t v
    cdef int width = fn.width, bits = 0, i
    cdef char text[80]
    if value < 0 or value.bit_length() > 64 or width > 64:
        return out.text(fn(value))
    v = PyLong_AsUnsignedLongLong(value)
    while bits < 64 and (v >> bits) != 0:
        bits += 1
    if bits < width:
        bits = width
    text[0] = b"b"
    text[1] = b"'"
    for i in range(bits):
        text[2 + i] = b"1" if (v >> (bits - 1 - i)) & 1 else b"0"
    text[2 + bits] = b"'"
    return out.raw(text, bits + 3)


cdef int _set_literal(_Out out, object fn, object value) except -1:
    """sql.SetLiteral for a mask within the members: 'm1,m2,...' (their quotes doubled in fn.quoted)."""
    cdef list quoted = <list>fn.quoted
    cdef Py_ssize_t n = len(quoted), i
    cdef uint64_t mask
    cdef bint first = True
    if value < 0 or value.bit_length() > n or n > 64:
        return out.text(fn(value))
    mask = PyLong_AsUnsignedLongLong(value)
    out.raw(b"'", 1)
    for i in range(n):
        if mask >> i & 1:
            if not first:
                out.raw(b",", 1)
            first = False
            out.text(quoted[i])
    return out.raw(b"'", 1)


cdef int _float_text(_Out out, char *text) except -1:
    """sql._float_text of a finite value's text: written with an exponent, the literal is a DOUBLE
    (not an exact DECIMAL) in MySQL and MariaDB."""
    out.raw(text, <Py_ssize_t>strlen(text))
    if strpbrk(text, b"eE") == NULL:
        out.raw(b"e0", 2)
    return 0


cdef int _float_literal(_Out out, int kind, object fn, object value) except -1:
    """sql.float32_literal and sql.double_literal for a finite float, with the same C functions
    Python's format() and repr() use; anything else (NaN, infinity, not a float) goes to `fn`."""
    cdef double v, number
    cdef float target, found
    cdef int digits
    cdef char *text
    if not PyFloat_CheckExact(value):
        return out.text(fn(value))
    v = PyFloat_AS_DOUBLE(value)
    if not isfinite(v):
        return out.text(fn(value))
    if kind == L_FLOAT32:
        target = <float>v
        for digits in range(6, 10):  # f"{value:.{digits}g}" until it stores the same float32
            text = PyOS_double_to_string(v, b'g', digits, 0, NULL)
            try:
                number = PyOS_string_to_double(text, NULL, None)
                if fabs(number) <= FLT_MAX:
                    found = <float>number
                    if memcmp(&found, &target, sizeof(float)) == 0:
                        return _float_text(out, text)
            finally:
                PyMem_Free(text)
    text = PyOS_double_to_string(v, b'r', 0, Py_DTSF_ADD_DOT_0, NULL)  # repr(value)
    try:
        return _float_text(out, text)
    finally:
        PyMem_Free(text)


cdef int _literal(_Out out, int kind, object fn, bytes charset, object value) except -1:
    cdef list literals
    cdef str text
    cdef long long number
    cdef int overflow = 0
    cdef char digits[24]
    cdef Py_ssize_t n
    if kind == L_STR and PyLong_CheckExact(value):
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow:
            if number < 0:
                out.raw(b"-", 1)
                return out.raw(digits, _put_uint(digits, <uint64_t>(-(number + 1)) + 1))
            return out.raw(digits, _put_uint(digits, <uint64_t>number))
        return out.text(str(value))
    if kind == L_ENUM and PyLong_CheckExact(value):
        literals = <list>fn.literals
        number = PyLong_AsLongLongAndOverflow(value, &overflow)
        if not overflow and 0 <= number < len(literals):
            return out.text(literals[number])
        return out.text(str(value))
    if kind == L_TEMPORAL and PyUnicode_CheckExact(value):
        out.raw(b"'", 1)
        out.text(value)
        return out.raw(b"'", 1)
    if kind == L_TEXT or kind == L_ASCII:
        return _text(out, value, kind == L_ASCII, charset)
    if kind == L_ASCII_OR_CALL:
        if not PyBytes_CheckExact(value):
            value = bytes(value)
        if _is_ascii(<const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)):
            return _text(out, value, True, charset)
        return out.text(fn(value))
    if kind == L_HEX:
        if not PyBytes_CheckExact(value):
            value = bytes(value)
        return _hex(out, <const unsigned char *>PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), _BINARY)
    if kind == L_DECIMAL:
        if PyUnicode_CheckExact(value):  # the text decode_rows(decimal_text=True) made
            return out.text(value)
        if type(value) is _decimal:
            text = str(value)  # three times as fast as format(value, "f"), and the same text unless
            if "E" not in text:  # it is in exponent form (Decimal('1E-7'): '0.0000001' wanted)
                return out.text(text)
        return out.text(format(value, "f"))
    if kind == L_STR:
        return out.text(str(value))
    if kind == L_TEMPORAL:
        return out.text("'" + value + "'")
    if kind == L_FLOAT32 or kind == L_DOUBLE:
        return _float_literal(out, kind, fn, value)
    if kind == L_BIT and PyLong_CheckExact(value):
        return _bit_literal(out, fn, value)
    if kind == L_SET and PyLong_CheckExact(value):
        return _set_literal(out, fn, value)
    return out.text(fn(value))


@cython.final
cdef class FullImages:
    """INSERT, DELETE and UPDATE of one table for images without MISSING values: the same text as
    sql._compile_full_images' generated functions, from the plan sql.compiled_statements builds."""

    cdef int n
    cdef int *vk  # literal kinds of the values and of the exact comparisons, in C
    cdef int *wk
    cdef str insert_head, delete_head, update_head, tail
    cdef list v_kind, v_fn, v_cs, w_kind, w_fn, w_cs, eq, isnull, exact, null
    cdef tuple by_value  # columns compared by value first: the key, or the lookup columns
    cdef tuple lookup  # the conflict check's columns compared by value first (TableRenderer._exact)
    cdef str check_head  # "SELECT COUNT(*) FROM `db`.`t` WHERE "
    cdef bint keyed
    cdef _Out out
    cdef _Out lines  # the plan's lines (see plan)
    cdef public str source

    def __init__(self, str insert_head, str delete_head, str update_head, str tail, tuple columns,
                 tuple by_value, bint keyed, tuple lookup=(), str check_head=""):
        cdef int i
        self.lookup = lookup
        self.check_head = check_head
        self.lines = _Out()
        self.insert_head = insert_head
        self.delete_head = delete_head
        self.update_head = update_head
        self.tail = tail
        self.n = len(columns)
        self.v_kind, self.v_fn, self.v_cs, self.w_kind, self.w_fn, self.w_cs = [], [], [], [], [], []
        self.eq, self.isnull, self.exact, self.null = [], [], [], []
        for v_kind, v_fn, v_cs, w_kind, w_fn, w_cs, eq, isnull, exact, null in columns:
            self.v_kind.append(v_kind)
            self.v_fn.append(v_fn)
            self.v_cs.append(v_cs)
            self.w_kind.append(w_kind)
            self.w_fn.append(w_fn)
            self.w_cs.append(w_cs)
            self.eq.append(eq)
            self.isnull.append(isnull)
            self.exact.append(exact)
            self.null.append(null)
        self.by_value = by_value
        self.keyed = keyed
        self.vk = <int *>PyMem_Malloc(sizeof(int) * (self.n + 1))
        self.wk = <int *>PyMem_Malloc(sizeof(int) * (self.n + 1))
        for i in range(self.n):
            self.vk[i] = self.v_kind[i]
            self.wk[i] = self.w_kind[i]
        self.out = _Out()
        self.source = "compiled (rollback/_speedups.pyx)"

    def __dealloc__(self):
        PyMem_Free(self.vk)
        PyMem_Free(self.wk)

    cdef int _value(self, int i, object v) except -1:
        if v is None:
            return self.out.raw(b"NULL", 4)
        return _literal(self.out, self.vk[i], self.v_fn[i], self.v_cs[i], v)

    cdef int _where(self, object image) except -1:
        return self._identify(image, self.by_value, not self.keyed)

    cdef int _identify(self, object image, tuple by_value, bint every_column) except -1:
        """`by_value` columns compared by value (`c`=literal), then with `every_column` every
        column byte-exactly: TableRenderer.where (the key, or the lookup columns and every column)
        and TableRenderer._exact (the lookup columns and every column)."""
        cdef _Out out = self.out
        cdef bint first = True
        cdef int i
        cdef object v
        for i in by_value:
            if not first:
                out.raw(b" AND ", 5)
            first = False
            v = image[i]
            if v is None:
                out.text(self.isnull[i])
            else:
                out.text(self.eq[i])
                _literal(out, self.vk[i], self.v_fn[i], self.v_cs[i], v)
        if not every_column:
            return 0
        for i in range(self.n):
            if not first:
                out.raw(b" AND ", 5)
            first = False
            v = image[i]
            if v is None:
                out.text(self.null[i])
            else:
                out.text(self.exact[i])
                _literal(out, self.wk[i], self.w_fn[i], self.w_cs[i], v)
        return 0

    cdef int _insert(self, tuple image) except -1:
        cdef _Out out = self.out
        cdef int i
        if len(image) != self.n:
            raise ValueError("image width differs from the table's")
        out.text(self.insert_head)
        for i in range(self.n):
            if i:
                out.raw(b", ", 2)
            self._value(i, image[i])
        return out.raw(b");", 2)

    cdef int _delete(self, tuple image) except -1:
        cdef _Out out = self.out
        if len(image) != self.n:
            raise ValueError("image width differs from the table's")
        out.text(self.delete_head)
        self._where(image)
        return out.text(self.tail)

    cdef int _update(self, tuple set_image, tuple where_image) except -1:
        """Appends the UPDATE and returns 1, or appends nothing and returns 0 when nothing differs."""
        cdef _Out out = self.out
        cdef Py_ssize_t start = out.size
        cdef int i
        cdef bint any_set = False
        cdef object s
        if len(set_image) != self.n or len(where_image) != self.n:
            raise ValueError("image width differs from the table's")
        out.text(self.update_head)
        for i in range(self.n):
            s = set_image[i]
            if where_image[i] != s:
                if any_set:
                    out.raw(b", ", 2)
                any_set = True
                out.text(self.eq[i])
                self._value(i, s)
        if not any_set:
            out.size = start
            return 0
        out.raw(b" WHERE ", 7)
        self._where(where_image)
        out.text(self.tail)
        return 1

    def insert(self, image):
        self.out.size = 0
        self._insert(tuple(image))
        return self.out.take()

    def delete(self, image):
        self.out.size = 0
        self._delete(tuple(image))
        return self.out.take()

    def update(self, set_image, where_image):
        self.out.size = 0
        if not self._update(tuple(set_image), tuple(where_image)):
            return None
        return self.out.take()

    def statements(self, str kind, list rows, bint forward):
        """What invert_rows (flashback, newest row first) or forward_row (`sql`) render for these rows."""
        cdef list out = []
        cdef Py_ssize_t i, n = len(rows)
        cdef int step = 1 if forward else -1
        cdef Py_ssize_t first = 0 if forward else n - 1
        cdef int op = self._op(kind, forward)
        for i in range(n):
            self.out.size = 0
            if self._one(op, rows[first + step * i], forward):
                out.append(self.out.take())
        return out

    cdef int _op(self, str kind, bint forward):
        """0: INSERT, 1: DELETE, 2: UPDATE of each row."""
        cdef int op = 0 if kind == "insert" else 1 if kind == "delete" else 2
        if not forward and op != 2:
            op = 1 - op  # a reverse INSERT is a DELETE and the other way round
        return op

    cdef int _one(self, int op, object row, bint forward) except -1:
        """Append the statement of one row; 0 when an UPDATE changed nothing (nothing appended)."""
        cdef tuple pair
        if op == 0:
            return self._insert(row) + 1
        if op == 1:
            return self._delete(row) + 1
        pair = row
        if forward:
            return self._update(pair[1], pair[0])
        return self._update(pair[0], pair[1])

    def script(self, str kind, list rows, bint forward):
        """(the statements as UTF-8 lines, their count, the longest one's bytes), as
        sql.FullImageStatements.script makes them."""
        cdef _Out out = self.out
        cdef Py_ssize_t i, start, n = len(rows)
        cdef Py_ssize_t longest = 0
        cdef Py_ssize_t count = 0
        cdef int step = 1 if forward else -1
        cdef Py_ssize_t first = 0 if forward else n - 1
        cdef int op = self._op(kind, forward)
        out.size = 0
        for i in range(n):
            start = out.size
            if not self._one(op, rows[first + step * i], forward):
                continue
            if out.size - start > longest:
                longest = out.size - start
            out.raw(b"\n", 1)
            count += 1
        data = PyBytes_FromStringAndSize(out.data, out.size)
        out.size = 0
        return data, count, longest

    def script_images(self, Layout layout, bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t limit,
                      str kind, bint forward, bint decimal_text=False):
        """(script(kind, rows, forward)'s three values, the position after the rows) for the rows
        decode_rows_part(layout, data, pos, end, limit, decimal_text) would give, written from the
        images' bytes: integers, strings, DATETIME2, DECIMAL text and ENUM members straight into the
        text, other values made one at a time as decode_rows makes them. For the INSERTs and DELETEs
        of images with every column (not UPDATEs); Fallback as decode_rows_part (nothing written)."""
        cdef _Out out = self.out
        cdef Py_ssize_t rows = 0, cap = 0, i, start, longest = 0
        cdef Py_ssize_t *starts = NULL
        cdef Py_ssize_t *grown
        cdef Py_ssize_t *at = NULL
        cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef int k
        cdef int op = self._op(kind, forward)
        if op == 2 or layout.ncols != self.n or layout.width != self.n:
            raise ValueError("script_images writes the INSERTs and DELETEs of images with every column")
        for k in range(self.n):
            if layout.col[k] != k:
                raise ValueError("script_images writes the INSERTs and DELETEs of images with every column")
        if end > PyBytes_GET_SIZE(data):
            end = PyBytes_GET_SIZE(data)
        out.size = 0
        try:
            at = <Py_ssize_t *>PyMem_Malloc((self.n + 1) * sizeof(Py_ssize_t))
            if at == NULL:
                raise MemoryError()
            while pos < end and limit != 0:  # where each row starts: a flashback writes the newest first
                if rows == cap:
                    cap = cap * 2 if cap else 256
                    grown = <Py_ssize_t *>PyMem_Realloc(starts, cap * sizeof(Py_ssize_t))
                    if grown == NULL:
                        raise MemoryError()
                    starts = grown
                starts[rows] = pos
                pos = _columns_at(layout, buf, pos, end, NULL)
                rows += 1
                limit -= 1
            for i in range(rows):
                start = out.size
                if op == 0:
                    self._insert_at(layout, buf, starts[i if forward else rows - 1 - i], end, decimal_text)
                else:
                    _columns_at(layout, buf, starts[i if forward else rows - 1 - i], end, at)
                    self._delete_at(layout, buf, at, end, decimal_text)
                if out.size - start > longest:
                    longest = out.size - start
                out.raw(b"\n", 1)
            script = PyBytes_FromStringAndSize(out.data, out.size)
        finally:
            PyMem_Free(starts)
            PyMem_Free(at)
            out.size = 0
        return script, rows, longest, pos

    cdef int _insert_at(self, Layout layout, const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end,
                        bint decimal_text) except -1:
        """_insert of the image at `pos` (its bounds checked by _columns_at)."""
        cdef _Out out = self.out
        cdef const unsigned char *nulls = buf + pos
        cdef int k
        pos += (self.n + 7) // 8
        out.text(self.insert_head)
        for k in range(self.n):
            if k:
                out.raw(b", ", 2)
            if nulls[k >> 3] >> (k & 7) & 1:
                out.raw(b"NULL", 4)
            else:
                pos = self._put_at(layout, k, False, buf, pos, end, decimal_text, None, "NULL")
        return out.raw(b");", 2)

    cdef int _delete_at(self, Layout layout, const unsigned char *buf, Py_ssize_t *at, Py_ssize_t end,
                        bint decimal_text) except -1:
        """_delete of the image whose columns start at `at` (-1: NULL), its WHERE as _identify writes it."""
        cdef _Out out = self.out
        cdef bint first = True
        cdef int i
        for i in range(self.n):  # the values the WHERE leaves out are checked as decode_rows checks them
            if at[i] >= 0:
                _check_column(layout, i, buf, at[i], end, decimal_text)
        out.text(self.delete_head)
        for i in self.by_value:
            if not first:
                out.raw(b" AND ", 5)
            first = False
            if at[i] < 0:
                out.text(self.isnull[i])
            else:
                self._put_at(layout, i, False, buf, at[i], end, decimal_text, self.eq[i], self.isnull[i])
        if not self.keyed:
            for i in range(self.n):
                if not first:
                    out.raw(b" AND ", 5)
                first = False
                if at[i] < 0:
                    out.text(self.null[i])
                else:
                    self._put_at(layout, i, True, buf, at[i], end, decimal_text, self.exact[i], self.null[i])
        return out.text(self.tail)

    cdef inline Py_ssize_t _put_at(self, Layout layout, int k, bint exact, const unsigned char *buf,
                                   Py_ssize_t pos, Py_ssize_t end, bint decimal_text, object before,
                                   object if_none) except -1:
        """The text `before` (None: nothing), then the literal of column `k`'s value at `pos` (not
        NULL in the image): the value's (_value's), or with `exact` the exact comparison's
        (_identify's every column); `if_none` alone when that value decodes as None (as _identify and
        _value write a None). The position after the value."""
        cdef _Out out = self.out
        cdef int literal = self.wk[k] if exact else self.vk[k]
        cdef int kind = layout.kind[k]
        cdef int size = layout.size[k]
        cdef uint64_t u
        cdef int64_t v
        cdef Py_ssize_t length
        cdef char digits[24]
        cdef char text[160]
        cdef char decimals[72]
        cdef bint negative
        cdef int nd, written
        cdef _Decimal dec
        cdef list literals
        cdef object value
        if kind == K_INT and literal == L_STR:
            if before is not None:
                out.text(before)
            u = _le(buf + pos, size)
            if layout.arg[k]:
                if size < 8 and u >> (size * 8 - 1):
                    u |= ~((<uint64_t>1 << (size * 8)) - 1)
                v = <int64_t>u
                if v < 0:
                    out.raw(b"-", 1)
                    out.raw(digits, _put_uint(digits, <uint64_t>(-(v + 1)) + 1))
                    return pos + size
            out.raw(digits, _put_uint(digits, u))
            return pos + size
        if kind == K_STRING and (literal == L_TEXT or literal == L_ASCII or literal == L_HEX):
            if before is not None:
                out.text(before)
            size = layout.arg[k]
            length = <Py_ssize_t>_le(buf + pos, size)
            if literal == L_HEX:
                _hex(out, buf + pos + size, length, _BINARY)
            else:
                _text_at(out, buf + pos + size, length, literal == L_ASCII,
                         self.w_cs[k] if exact else self.v_cs[k])
            return pos + size + length
        if kind == K_DATETIME2 and literal == L_TEMPORAL:
            written = _datetime2_put(_be(buf + pos, size), layout.arg[k], text + 1)
            if written >= 0:  # else left to the converter, below
                if before is not None:
                    out.text(before)
                text[0] = b"'"
                text[written + 1] = b"'"
                out.raw(text, written + 2)
                return pos + size
        elif kind == K_DECIMAL and literal == L_DECIMAL and decimal_text:
            dec = <_Decimal>layout.extras[k]
            nd = _decimal_digits(buf + pos, dec, decimals, &negative)
            if _plain_decimal(negative, decimals, nd, dec.scale):  # else a Decimal, or refused, below
                if before is not None:
                    out.text(before)
                out.raw(text, _decimal_put(negative, decimals, nd, dec.scale, text))
                return pos + size
        elif kind == K_LE_UINT and literal == L_ENUM:
            if before is not None:
                out.text(before)
            u = _le(buf + pos, size)
            literals = <list>(self.w_fn[k] if exact else self.v_fn[k]).literals
            if u < <uint64_t>len(literals):
                out.text(literals[u])
            else:
                out.raw(digits, _put_uint(digits, u))
            return pos + size
        value = _column(layout, k, buf, &pos, end, decimal_text)
        if value is None:
            out.text(if_none)
            return pos
        if before is not None:
            out.text(before)
        if exact:
            _literal(out, literal, self.w_fn[k], self.w_cs[k], value)
        else:
            _literal(out, literal, self.v_fn[k], self.v_cs[k], value)
        return pos

    cdef int _check(self, int op, object row) except -1:
        """Append the conflict check of a reverse statement (invert.invert_row's): 1 when one was
        appended, 0 for none (the reverse INSERT of a table without a key)."""
        if op == 1:  # a reverse DELETE: the inserted row must be there as the binlog left it
            self.out.text(self.check_head)
            self._identify(row, self.lookup, True)
            return 1
        if op == 2:  # a reverse UPDATE: the row must be there as the UPDATE left it
            self.out.text(self.check_head)
            self._identify((<tuple>row)[1], self.lookup, True)
            return 1
        if not self.keyed:
            return 0
        self.out.text(self.check_head)  # a reverse INSERT: its key must be free
        self._identify(row, self.by_value, False)
        return 1

    def plan(self, str kind, list rows, bint forward, object plan_lines, object indexes=None):
        """(the statements as `script` returns them: UTF-8 lines, their count, the longest one's
        bytes, and the execution plan's lines of those statements as UTF-8), as the
        pipeline.plan_lines.PlanLines `plan_lines` writes them (from its `head` and `tail`); a
        reverse statement's line carries the check invert.invert_row makes. `indexes`: each row's
        index in its event (the rows are a selection of it), else their position in `rows`."""
        cdef bytes head = plan_lines.head
        cdef bytes tail = plan_lines.tail
        cdef _Out out = self.out
        cdef _Out lines = self.lines
        cdef Py_ssize_t i, at, start, end, n = len(rows)
        cdef Py_ssize_t longest = 0
        cdef Py_ssize_t count = 0
        cdef int step = 1 if forward else -1
        cdef Py_ssize_t first = 0 if forward else n - 1
        cdef int op = self._op(kind, forward)
        cdef bint checked
        cdef bytes kind_text = kind.encode("ascii")
        cdef char digits[24]
        out.size = 0
        lines.size = 0
        for i in range(n):
            at = first + step * i
            start = out.size
            if not self._one(op, rows[at], forward):
                continue
            end = out.size
            if end - start > longest:
                longest = end - start
            lines.raw(PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
            if forward:
                lines.raw(b'"type": "', 9)
                lines.raw(PyBytes_AS_STRING(kind_text), PyBytes_GET_SIZE(kind_text))
                lines.raw(b'", "check": null, "expect": null', 32)
            else:
                lines.raw(b'"row": ', 7)
                lines.raw(digits, _put_uint(digits, <uint64_t>(at if indexes is None else indexes[at])))
                lines.raw(b', "type": "', 11)
                lines.raw(PyBytes_AS_STRING(kind_text), PyBytes_GET_SIZE(kind_text))
                lines.raw(b'", "check": ', 12)
                checked = self._check(op, rows[at])
                if checked:
                    _json_string(lines, out.data + end, out.size - end)
                    out.size = end
                else:
                    lines.raw(b"null", 4)
                lines.raw(b', "expect": 0' if op == 0 else b', "expect": 1', 13)
            lines.raw(PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail))
            _json_string(lines, out.data + start, end - start)
            lines.raw(b"}\n", 2)
            out.raw(b"\n", 1)
            count += 1
        data = PyBytes_FromStringAndSize(out.data, out.size)
        plan = PyBytes_FromStringAndSize(lines.data, lines.size)
        out.size = 0
        lines.size = 0
        return data, count, longest, plan


cdef inline bint _json_plain(uint64_t x) noexcept:
    """Whether none of the 8 bytes in `x` needs a JSON escape: no control character (< 0x20), no
    quote, no backslash (exact as a yes or no: the usual test for a zero byte, three times)."""
    cdef uint64_t ones = 0x0101010101010101ULL
    cdef uint64_t quote = x ^ 0x2222222222222222ULL
    cdef uint64_t backslash = x ^ 0x5C5C5C5C5C5C5C5CULL
    return ((((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash))
            & 0x8080808080808080ULL) == 0


cdef inline char *_json_char(char *w, unsigned char c) noexcept:
    if c >= 0x20 and c != 0x22 and c != 0x5C:
        w[0] = <char>c
        return w + 1
    w[0] = b'\\'
    if c == 0x22 or c == 0x5C:
        w[1] = <char>c
    elif c == 0x0A:
        w[1] = b'n'
    elif c == 0x0D:
        w[1] = b'r'
    elif c == 0x09:
        w[1] = b't'
    elif c == 0x08:
        w[1] = b'b'
    elif c == 0x0C:
        w[1] = b'f'
    else:
        w[1] = b'u'
        w[2] = b'0'
        w[3] = b'0'
        w[4] = _HEX[c >> 4]
        w[5] = _HEX[c & 15]
        return w + 6
    return w + 2


cdef int _json_string(_Out out, const char *text, Py_ssize_t n) except -1:
    """UTF-8 text as a JSON string, as json.dumps(..., ensure_ascii=False) writes it: quotes,
    backslashes and control characters escaped, everything else as it is. Eight bytes at a time
    while none of them needs an escape."""
    cdef Py_ssize_t i = 0, k
    cdef uint64_t word
    cdef char *w
    out.reserve(6 * n + 2)
    w = out.data + out.size
    w[0] = b'"'
    w += 1
    while i + 8 <= n:
        memcpy(&word, text + i, 8)
        if _json_plain(word):
            memcpy(w, &word, 8)
            w += 8
        else:
            for k in range(8):
                w = _json_char(w, <unsigned char>text[i + k])
        i += 8
    while i < n:
        w = _json_char(w, <unsigned char>text[i])
        i += 1
    w[0] = b'"'
    w += 1
    out.size = w - out.data
    return 0


# ---------------------------------------------------------------------------------------------
# The change log's lines (change_lines.ChangeLines, compiled)
# ---------------------------------------------------------------------------------------------

# How a column's values are written (change_lines.compiled_columns writes the same numbers).
DEF C_TEXT = 0   # bytes as UTF-8 text when they decode, else {"hex": ...}
DEF C_HEX = 1    # bytes as {"hex": ...}
DEF C_CALL = 2   # bytes through fn(value) (JSON documents)
DEF C_ENUM = 3   # an int through the members' JSON texts (index 0: ""), anything else through value
DEF C_SET = 4    # an int through fn(value), anything else through value


@cython.final
cdef class ChangeImages:
    """The change log's lines of one table's rows events: the same text as change_lines'
    generated image encoder and record lines, from the per-column plan change_lines prepares.
    Values of other types than the encoder writes itself go to `value(index, v)`, and an image
    with a column the binlog left out to `slow(row)`, as in the encoder."""

    cdef int n
    cdef int *kind
    cdef list keys, fns
    cdef object value, slow, missing
    cdef _Out out

    def __init__(self, tuple keys, tuple columns, object value, object slow, object missing):
        cdef int i
        self.n = len(keys)
        self.keys = list(keys)
        self.fns = []
        self.kind = <int *>PyMem_Malloc(sizeof(int) * (self.n + 1))
        for i in range(self.n):
            self.kind[i] = columns[i][0]
            self.fns.append(columns[i][1])
        self.value = value
        self.slow = slow
        self.missing = missing
        self.out = _Out()

    def __dealloc__(self):
        PyMem_Free(self.kind)

    cdef int _call(self, int i, object v) except -1:
        return self.out.text(self.value(i, v))

    cdef int _image(self, object row) except -1:
        cdef _Out out = self.out
        cdef tuple image
        cdef int i, k, overflow
        cdef object v, found
        cdef long long number
        cdef char digits[24]
        cdef const char *data
        cdef Py_ssize_t size
        cdef bytes key
        if type(row) is not tuple or len(<tuple>row) != self.n:
            return out.text(self.slow(row))
        image = <tuple>row
        for i in range(self.n):
            if image[i] is self.missing:
                return out.text(self.slow(row))
        out.raw(b"{", 1)
        for i in range(self.n):
            key = <bytes>self.keys[i]
            out.raw(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
            v = image[i]
            k = self.kind[i]
            if k == C_ENUM or k == C_SET:
                if not PyLong_CheckExact(v):
                    self._call(i, v)
                elif k == C_SET:
                    out.text(self.fns[i](v))
                else:
                    overflow = 0
                    number = PyLong_AsLongLongAndOverflow(v, &overflow)
                    if not overflow and 0 <= number < len(<tuple>self.fns[i]):
                        found = (<tuple>self.fns[i])[number]
                        out.raw(PyBytes_AS_STRING(found), PyBytes_GET_SIZE(found))
                    else:
                        self._call(i, v)
            elif PyLong_CheckExact(v):
                overflow = 0
                number = PyLong_AsLongLongAndOverflow(v, &overflow)
                if overflow:
                    out.text(str(v))
                elif number < 0:
                    out.raw(b"-", 1)
                    out.raw(digits, _put_uint(digits, <uint64_t>(-(number + 1)) + 1))
                else:
                    out.raw(digits, _put_uint(digits, <uint64_t>number))
            elif PyBytes_CheckExact(v):
                data = PyBytes_AS_STRING(v)
                size = PyBytes_GET_SIZE(v)
                if k == C_TEXT and _utf8_valid(<const unsigned char *>data, size):
                    _json_string(out, data, size)
                elif k == C_TEXT or k == C_HEX:
                    out.raw(b'{"hex":"', 8)
                    _hex_digits(out, <const unsigned char *>data, size)
                    out.raw(b'"}', 2)
                else:
                    out.text(self.fns[i](v))
            elif PyUnicode_CheckExact(v):
                data = PyUnicode_AsUTF8AndSize(v, &size)
                _json_string(out, data, size)
            elif v is None:
                out.raw(b"null", 4)
            elif type(v) is _decimal:
                out.raw(b'"', 1)
                out.text(str(v))  # a Decimal's text holds no character JSON escapes
                out.raw(b'"', 1)
            else:
                self._call(i, v)
        return out.raw(b"}", 1)

    def lines(self, bytes head, str kind, list rows, Py_ssize_t first=0):
        """Every record of one rows event as UTF-8, a line each: `head` is the record's head as
        JSON without its closing brace (the same for every row of the event); `first`: the index
        in the event of rows[0] (the rows are a part of it)."""
        cdef _Out out = self.out
        cdef Py_ssize_t index, n = len(rows)
        cdef char digits[24]
        cdef bint update = kind == "update"
        cdef const char *key = b',"after":' if kind == "insert" else b',"before":'
        cdef Py_ssize_t key_size = 9 if kind == "insert" else 10
        cdef object row
        out.size = 0
        for index in range(n):
            out.raw(PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
            out.raw(b',"row":', 7)
            out.raw(digits, _put_uint(digits, <uint64_t>(first + index)))
            if update:
                row = rows[index]
                out.raw(b',"before":', 10)
                self._image(row[0])
                out.raw(b',"after":', 9)
                self._image(row[1])
            else:
                out.raw(key, key_size)
                self._image(rows[index])
            out.raw(b"}\n", 2)
        data = PyBytes_FromStringAndSize(out.data, out.size)
        out.size = 0
        return data


# ---------------------------------------------------------------------------------------------
# The planner's walk over rows events (reader.skip_run, compiled)
# ---------------------------------------------------------------------------------------------

DEF MAX_EVENT_LENGTH = 1 << 30  # reader.MAX_EVENT_LENGTH
DEF V4_HEADER_LEN = 19


def skip_run(const unsigned char[::1] buf, Py_ssize_t pos, Py_ssize_t stop, Py_ssize_t cut_at,
             Py_ssize_t header_len, Py_ssize_t checksum_len, const unsigned char[::1] kinds):
    """(position after the run, events in it, timestamp of its last event or -1): the events from
    ``pos`` whose type ``kinds[type]`` marks, framed as reader.iter_events frames them, up to the first
    other event, the first that cannot be framed, or the first position at or past ``cut_at`` or
    ``stop``. reader.skip_run is its pure-Python twin."""
    cdef Py_ssize_t end = buf.shape[0]  # events must end by here (iter_events' limit)
    cdef Py_ssize_t walk_end
    cdef Py_ssize_t count = 0
    cdef long long timestamp = -1
    cdef uint64_t length
    cdef const unsigned char *p
    if kinds.shape[0] != 256 or pos < 0 or header_len < V4_HEADER_LEN:
        raise ValueError("skip_run: kinds marks 256 event types, pos >= 0, header_len >= 19")
    if stop < end:
        end = stop
    walk_end = cut_at if cut_at < end else end  # an event may end past cut_at: the walk stops there
    while pos < walk_end:
        if pos + header_len > end:
            break
        p = &buf[pos]
        if not kinds[p[4]]:
            break
        length = p[9] | (<uint64_t>p[10] << 8) | (<uint64_t>p[11] << 16) | (<uint64_t>p[12] << 24)
        if length < <uint64_t>(header_len + checksum_len) or length > MAX_EVENT_LENGTH:
            break
        if pos + <Py_ssize_t>length > end:
            break
        timestamp = p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) | (<uint64_t>p[3] << 24)
        count += 1
        pos += <Py_ssize_t>length
    return pos, count, timestamp


# ---------------------------------------------------------------------------------------------
# --net: a partition's changes folded per key into steps (render/net.py NetChains.add, compiled)
# ---------------------------------------------------------------------------------------------

cdef inline object _row_key(object image, tuple key, Py_ssize_t single):
    """What operator.itemgetter(*key) gives: the value of one column, a tuple of several."""
    cdef Py_ssize_t i, n
    cdef tuple values
    if single >= 0:
        return image[single]
    n = len(key)
    values = PyTuple_New(n)
    for i in range(n):
        value = image[<Py_ssize_t>key[i]]
        Py_INCREF(value)
        PyTuple_SET_ITEM(values, i, value)
    return values


cdef inline void _continued(list step, object after, object event, Py_ssize_t number):
    """A key's open step taken on by one more change: its image after it, and where it was."""
    step[5] = after
    step[6] = event
    step[7] = number


cdef inline void _chain_insert(dict open_, list steps, object k, object after, object event, Py_ssize_t number):
    """An INSERT of key `k`: a new step, or the step open on the key taken on (it left no row)."""
    cdef list step
    found = open_.get(k)
    if found is None or (<list>found)[5] is not None:
        step = [0, k, None, event, number, after, event, number]
        open_[k] = step
        steps.append(step)
    else:
        _continued(<list>found, after, event, number)


cdef inline void _chain_delete(dict open_, list steps, object k, object before, object event, Py_ssize_t number):
    """A DELETE of key `k`: a new step, or the step open on the key taken on (it left the row)."""
    cdef list step
    found = open_.get(k)
    if found is None or (<list>found)[5] is None:
        step = [2, k, before, event, number, None, event, number]
        open_[k] = step
        steps.append(step)
    else:
        _continued(<list>found, None, event, number)


cdef inline void _chain_update(dict open_, list steps, object k, object moved, object before, object after,
                               object pair, object event, Py_ssize_t number):
    """An UPDATE of key `k` to key `moved`: a step of its own that ends both keys' steps where it moves
    the key (its images as `pair`); else a new step, or the step open on the key taken on."""
    cdef list step
    if k != moved:
        open_.pop(k, None)
        open_.pop(moved, None)
        steps.append([3, None, pair, event, number, None, event, number])
        return
    found = open_.get(k)
    if found is None or (<list>found)[5] is None:
        step = [1, k, before, event, number, after, event, number]
        open_[k] = step
        steps.append(step)
    else:
        _continued(<list>found, after, event, number)


def net_chain(tuple key, str kind, list rows, object event, dict open_, list steps):
    """NetChains.add's loop over one rows event's changes (rollback/render/net.py, its pure-Python
    twin): the same steps, in the same order, with the same objects in them. A step is the list
    [kind, key, before, event, row, after, last event, last row]; kinds INSERT, UPDATE, DELETE, MOVE =
    0, 1, 2, 3."""
    cdef Py_ssize_t number, n = len(rows)
    cdef Py_ssize_t single = <Py_ssize_t>key[0] if len(key) == 1 else -1
    cdef object image, before, after, pair
    if kind == "insert":
        for number in range(n):
            image = rows[number]
            if type(image) is not tuple:
                image = tuple(image)
            _chain_insert(open_, steps, _row_key(image, key, single), image, event, number)
    elif kind == "delete":
        for number in range(n):
            image = rows[number]
            if type(image) is not tuple:
                image = tuple(image)
            _chain_delete(open_, steps, _row_key(image, key, single), image, event, number)
    else:
        for number in range(n):
            pair = rows[number]
            before, after = pair
            if type(before) is not tuple:  # (as the pure twin: both made tuples where the first is not)
                before, after = tuple(before), tuple(after)
            _chain_update(
                open_, steps, _row_key(before, key, single), _row_key(after, key, single), before, after,
                pair, event, number
            )


def net_chain_keyed(str kind, list keys, list images, object event, dict open_, list steps):
    """net_chain's loop over one rows event's changes given as their keys and images, the images as
    image_rows gives them (the bytes each takes in the event): an UPDATE's keys and images alternate,
    before then after. The same steps as net_chain gives for the decoded rows, with those images."""
    cdef Py_ssize_t number, n = len(images)
    cdef object before, after
    if kind == "insert":
        for number in range(n):
            _chain_insert(open_, steps, keys[number], images[number], event, number)
    elif kind == "delete":
        for number in range(n):
            _chain_delete(open_, steps, keys[number], images[number], event, number)
    else:
        if n % 2:
            raise ValueError("an UPDATE's images come in pairs")
        for number in range(n // 2):
            before = images[2 * number]
            after = images[2 * number + 1]
            _chain_update(
                open_, steps, keys[2 * number], keys[2 * number + 1], before, after, (before, after), event,
                number
            )


def image_rows(Layout layout, bytes data, Py_ssize_t pos, Py_ssize_t end, tuple key, bint decimal_text=False):
    """(the row keys of the images of data[pos:end], each image's bytes, the position after them): the
    keys as image_keys gives them, each image the bytes it takes in the rows event, and every value
    checked as decode_rows_part(layout, data, pos, end, -1, decimal_text) reads it (Fallback where it
    would not give them: the caller decodes the rows). For images with every column."""
    cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t *at = NULL
    cdef Py_ssize_t start
    cdef Py_ssize_t single = <Py_ssize_t>key[0] if len(key) == 1 else -1
    cdef list keys = []
    cdef list images = []
    cdef int k
    _check_full_layout(layout, key, "image_rows")
    if end > PyBytes_GET_SIZE(data):
        end = PyBytes_GET_SIZE(data)
    at = <Py_ssize_t *>PyMem_Malloc((layout.ncols + 1) * sizeof(Py_ssize_t))
    if at == NULL:
        raise MemoryError()
    try:
        while pos < end:
            start = pos
            pos = _columns_at(layout, buf, pos, end, at)
            for k in range(layout.ncols):
                if at[k] >= 0:
                    _check_column(layout, k, buf, at[k], end, decimal_text)
            keys.append(_image_key(layout, buf, at, end, key, single, decimal_text))
            images.append(PyBytes_FromStringAndSize(<const char *>buf + start, pos - start))
    finally:
        PyMem_Free(at)
    return keys, images, pos


def net_rows(object number, list steps, list items, list keys):
    """chained_rows's loop over one table's steps (rollback/render/net_local.py, its pure-Python twin):
    each step's key onto `keys`, each net row onto `items` as ((last event, last row), number, kind,
    image), in the steps' order. Returns (inserts, updates, deletes): whether any net row is of that
    kind; None where a step moves a key (nothing more is read)."""
    cdef list step
    cdef object kind, before, after
    cdef bint inserts = False, updates = False, deletes = False
    for found in steps:
        step = <list>found
        kind = step[0]
        if kind == 3:
            return None
        keys.append(step[1])
        before = None if kind == 0 else step[2]
        after = step[5]
        if before is None:
            if after is None:
                continue
            items.append(((step[6], step[7]), number, "insert", after))
            inserts = True
        elif after is None:
            items.append(((step[6], step[7]), number, "delete", before))
            deletes = True
        elif before != after:
            items.append(((step[6], step[7]), number, "update", (before, after)))
            updates = True
    return inserts, updates, deletes


cdef bint _marshal_safe(object values):
    cdef object t = type(values)
    if t is list:
        for item in <list>values:
            if not _marshal_safe(item):
                return False
        return True
    if t is tuple:
        for item in <tuple>values:
            if not _marshal_safe(item):
                return False
        return True
    return values is None or t is int or t is str or t is bytes or t is float or t is bool


def marshal_safe(object values):
    """Whether `values` (lists and tuples, nested) holds only None, bool, int, float, str and bytes,
    each of exactly that type: what marshal writes and reads back as the same values of the same types
    (rollback/pipeline/parts.py, marshal_safe is its pure-Python twin)."""
    return _marshal_safe(values)


cdef int _check_full_layout(Layout layout, tuple key, str who) except -1:
    """Raise ValueError unless the images have every column, in order, and the key's columns are among
    them (what image_keys and image_rows read)."""
    cdef int k
    cdef Py_ssize_t i, c
    if layout.ncols != layout.width:
        raise ValueError(f"{who} reads images with every column")
    for k in range(layout.ncols):
        if layout.col[k] != k:
            raise ValueError(f"{who} reads images with every column")
    for i in range(len(key)):
        c = <Py_ssize_t>key[i]
        if c < 0 or c >= layout.ncols:
            raise ValueError("a key column out of the image")
    return 0


cdef object _image_key(Layout layout, const unsigned char *buf, Py_ssize_t *at, Py_ssize_t end, tuple key,
                       Py_ssize_t single, bint decimal_text):
    """The row key of the image whose columns start at `at` (_columns_at): one column's value, or a
    tuple of several (None for a NULL column)."""
    cdef Py_ssize_t i, c, p
    cdef Py_ssize_t n = len(key)
    cdef object value, values
    if single >= 0:
        if at[single] < 0:
            return None
        p = at[single]
        return _column(layout, <int>single, buf, &p, end, decimal_text)
    values = PyTuple_New(n)
    for i in range(n):
        c = <Py_ssize_t>key[i]
        if at[c] < 0:
            value = None
        else:
            p = at[c]
            value = _column(layout, <int>c, buf, &p, end, decimal_text)
        _set(values, i, value)
    return values


def image_keys(Layout layout, bytes data, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t limit, tuple key,
               bint decimal_text=False):
    """(the row keys of the first `limit` images of data[pos:end] (every one when `limit` < 0), the
    position after them): what rollback.render.net.row_keys gives for the rows decode_rows_part
    would give, only the key's columns made into values. For images with every column (a full
    DELETE's, as FullImages.script_images takes them); Fallback where an image does not fit."""
    cdef const unsigned char *buf = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t *at = NULL
    cdef Py_ssize_t single = <Py_ssize_t>key[0] if len(key) == 1 else -1
    cdef list out = []
    _check_full_layout(layout, key, "image_keys")
    if end > PyBytes_GET_SIZE(data):
        end = PyBytes_GET_SIZE(data)
    at = <Py_ssize_t *>PyMem_Malloc((layout.ncols + 1) * sizeof(Py_ssize_t))
    if at == NULL:
        raise MemoryError()
    try:
        while pos < end and limit != 0:
            pos = _columns_at(layout, buf, pos, end, at)
            out.append(_image_key(layout, buf, at, end, key, single, decimal_text))
            limit -= 1
    finally:
        PyMem_Free(at)
    return out, pos
