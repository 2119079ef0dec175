"""A seeded differential mutation fuzzer of the decoder: real binlogs of the vendored corpus
(tests/corpus) with a TABLE_MAP, a rows event or a TRANSACTION_PAYLOAD (its inner events, inflated,
mutated and compressed again) changed, every CRC32 made right again, run through both hot paths (the
compiled core and the pure-Python code): the records, the statements of full images (with a schema
made from the table map), and the flashback (script, plan, change log) and forward scripts.

A mutant fails the campaign when the two paths differ, when either ends in an error that is not a
RollbackError (an internal error), or when the worker process running it dies (a signal), hangs
(past --timeout) or grows past --max-rss; its address space is capped (--address-space). Failing
mutants are written to --out with what went wrong.

    .venv/bin/python -m tools.fuzz_decoder --seconds 3600 --seed 7 --out /tmp/fuzz
    .venv/bin/python -m tools.fuzz_decoder --mutants 200 --seed 1

The same seed and mutant number always give the same bytes. tests/unit/binlog/test_fuzz_lane.py
runs a short campaign in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "corpus"
FILES = (
    "Fanduzi__BinlogVisualizer/cmd/binlogviz/testdata/minimal.binlog",
    "blackbeam__rust_mysql_common/test-data/binlogs/json.binlog.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/vector.binlog",
    "blackbeam__rust_mysql_common/test-data/binlogs/mysql-enum-string-set.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/transaction_compression.000001",
    "blackbeam__rust_mysql_common/test-data/binlogs/json-opaque.binlog",
    "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.compressed",
    "go-mysql-org__go-mysql/replication/t/tcb-eval002c-bin.003320",
    "apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000057",
)
HEADER = struct.Struct("<IBIIIH")
TABLE_MAP, TRANSACTION_PAYLOAD = 19, 40
ROWS = frozenset({23, 24, 25, 30, 31, 32, 39, 166, 167, 168, 169, 170, 171})
TARGETS = ROWS | {TABLE_MAP, TRANSACTION_PAYLOAD}
INTERESTING = (0, 1, 0x7F, 0x80, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF)
MiB = 1 << 20


# ------------------------------------------------------------------------------------- mutation


def _events(data: bytes) -> list[tuple[int, int, int]]:
    """(pos, type, length) of each whole event after the magic."""
    out = []
    pos = 4
    while pos + HEADER.size <= len(data):
        _ts, type_code, _sid, length, _next, _flags = HEADER.unpack_from(data, pos)
        if length < HEADER.size or pos + length > len(data):
            break
        out.append((pos, type_code, length))
        pos += length
    return out


def _has_crc(data: bytes) -> bool:
    from rollback.binlog.reader import read_file_facts

    return read_file_facts(memoryview(data))[0].checksum_len == 4


def _mutate_bytes(rng: random.Random, body: bytearray, start: int) -> None:
    """One to three edits of body[start:]: bytes set, bits flipped, runs inserted or deleted."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if len(body) <= start:
            return
        at = rng.randrange(start, len(body))
        op = rng.random()
        if op < 0.35:
            body[at] = rng.choice(INTERESTING)
        elif op < 0.65:
            body[at] ^= 1 << rng.randrange(8)
        elif op < 0.85:
            body[at] = rng.randrange(256)
        elif op < 0.93:
            body[at:at] = bytes([rng.choice(INTERESTING)]) * rng.randint(1, 8)
        else:
            del body[at : at + rng.randint(1, 8)]


def lenenc(n: int) -> bytes:
    """A MySQL length-encoded integer."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def _read_lenenc(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first, 0)
    return int.from_bytes(buf[pos + 1 : pos + 1 + size], "little"), pos + 1 + size


def _mutate_payload(rng: random.Random, body: bytes) -> bytes:
    """A TRANSACTION_PAYLOAD body with one of its inner events mutated (inflated, changed, compressed
    again); sometimes with its declared sizes changed instead."""
    import zstandard

    pos, fields = 0, {}
    while pos < len(body):
        kind, pos = _read_lenenc(body, pos)
        if kind == 0:
            break
        length, pos = _read_lenenc(body, pos)
        fields[kind], _ = _read_lenenc(body, pos)
        pos += length
    data = body[pos:]
    inner = zstandard.ZstdDecompressor().decompressobj().decompress(data) if fields.get(2, 0) == 0 else data
    events = bytearray(inner)
    frames = _events(b"\xfebin" + inner)
    if frames and rng.random() < 0.85:
        pos, _type, length = rng.choice([f for f in frames if f[1] in TARGETS] or frames)
        pos -= 4
        event = bytearray(events[pos : pos + length])
        _mutate_bytes(rng, event, HEADER.size)
        struct.pack_into("<I", event, 9, len(event))
        events[pos : pos + length] = event
    else:
        _mutate_bytes(rng, events, 0)
    packed = (
        zstandard.ZstdCompressor(level=3).compress(bytes(events)) if fields.get(2, 0) == 0 else bytes(events)
    )
    uncompressed = len(events)
    if rng.random() < 0.15:
        uncompressed = rng.choice([0, uncompressed - 1, uncompressed + 1, 1 << 30, (1 << 32) + 1])
    header = b""
    for kind, value in ((1, len(packed)), (2, fields.get(2, 0)), (3, uncompressed)):
        encoded = lenenc(value)
        header += lenenc(kind) + lenenc(len(encoded)) + encoded
    return header + b"\x00" + packed


def mutant(seed: int, number: int) -> tuple[str, bytes]:
    """(corpus file, mutated bytes) of mutant `number` of campaign `seed`."""
    rng = random.Random(f"{seed}:{number}")
    rel = rng.choice(FILES)
    data = (CORPUS / rel).read_bytes()
    crc = _has_crc(data)
    frames = [f for f in _events(data) if f[1] in TARGETS]
    out = bytearray(data)
    for pos, type_code, length in sorted(rng.sample(frames, min(len(frames), rng.choice((1, 1, 1, 2)))))[
        ::-1
    ]:
        event = bytearray(out[pos : pos + length])
        trailer = 4 if crc else 0
        body = bytearray(event[HEADER.size : length - trailer])
        if type_code == TRANSACTION_PAYLOAD:
            try:
                body = bytearray(_mutate_payload(rng, bytes(body)))
            except Exception:  # a payload the mutation cannot read: mutate its bytes instead
                _mutate_bytes(rng, body, 0)
        else:
            _mutate_bytes(rng, body, 0)
        event = bytearray(event[: HEADER.size]) + body
        struct.pack_into("<I", event, 9, len(event) + trailer)
        if crc:
            event += struct.pack("<I", zlib.crc32(event))
        out[pos : pos + length] = event
    return rel, bytes(out)


# -------------------------------------------------------------------------------------- checking


def _schema_of(tmap: Any) -> Any:
    from rollback.schema.charsets import charset_of_collation
    from rollback.schema.tables import Column, TableSchema

    charsets = tmap.charsets or (None,) * tmap.column_count
    columns = [
        Column(f"c{i + 1}", charset=charset_of_collation(c) if c is not None else None)
        for i, c in enumerate(charsets)
    ]
    return TableSchema(tmap.database, tmap.table, columns, (0,), [], "ddl")


def _decoded(path: Path) -> list[Any]:
    """Every record, and the statements of every rows event with full images (keyed by column 1)."""
    from rollback.binlog.decode import StreamState, decode_stream, rows_batch
    from rollback.binlog.reader import read_file_facts
    from rollback.binlog.rows import RowsEvent
    from rollback.render.records import batch_records, record_json
    from rollback.render.sql import TableRenderer

    buf = memoryview(path.read_bytes())
    facts, _ = read_file_facts(buf, str(path))
    state = StreamState(facts, path=str(path), file_name=path.name)
    out: list[Any] = []
    for decoded in decode_stream(buf, state, 4, len(buf)):
        event = decoded.event
        if not isinstance(event, RowsEvent):
            continue
        batch = rows_batch(decoded, event, state)
        out.extend(record_json(record) for record in batch_records(batch))
        full = (1 << event.column_count) - 1
        if event.present != full or event.present_after != full or event.partial or not event.column_count:
            continue
        statements = TableRenderer(batch.table, _schema_of(batch.table), "mysql").full_images()
        if statements is not None:
            for forward in (False, True):
                out.append(statements.script(batch.kind, batch.rows, forward))
    return out


def _generated(path: Path, mode: str) -> tuple[bytes, ...]:
    from rollback import Filters, Options, RangeSpec, generate

    out = path.with_name("out.sql")
    plan, changes = path.with_name("out.plan"), path.with_name("out.changes")
    generate(RangeSpec([str(path)]), Filters(), Options(mode=mode, engine="local"), out, plan, changes)
    return out.read_bytes(), plan.read_bytes(), changes.read_bytes()


def _outcome(call: Any, *args: Any) -> tuple[Any, ...]:
    from rollback.base.errors import RollbackError

    try:
        return "ok", call(*args)
    except RollbackError as exc:
        return "refused", type(exc).__name__, str(exc)
    except Exception as exc:  # what the fuzzer is looking for: reported, never raised
        return "internal", type(exc).__name__, str(exc)


def check(path: Path) -> str | None:
    """None, or what is wrong with the mutant at `path`: a divergence or an internal error."""
    import importlib

    from rollback.base import hotpath

    core = importlib.import_module("rollback._speedups")
    results = []
    saved = hotpath.CORE
    try:
        for label, chosen in (("pure", None), ("compiled", core)):
            hotpath.CORE = chosen
            results.append(
                (
                    label,
                    [
                        _outcome(_decoded, path),
                        _outcome(_generated, path, "flashback"),
                        _outcome(_generated, path, "forward"),
                    ],
                )
            )
    finally:
        hotpath.CORE = saved
    (_, pure), (_, compiled) = results
    for what, a, b in zip(("records and statements", "flashback", "forward"), pure, compiled, strict=True):
        if a != b:
            return f"{what}: the paths differ: pure {_short(a)} / compiled {_short(b)}"
        if a[0] == "internal":
            return f"{what}: internal error on both paths: {a[1]}: {a[2]}"
    return None


def _short(result: tuple[Any, ...]) -> str:
    return repr(result)[:400]


# ------------------------------------------------------------------------------------ the worker


def worker(seed: int, first: int, count: int, work: Path) -> None:
    """Check mutants first..first+count-1, noting each number in work/current before it runs; one
    JSON line per failing mutant on stdout."""
    path = work / "fuzz.bin"
    for number in range(first, first + count):
        rel, data = mutant(seed, number)
        (work / "current").write_text(str(number))
        path.write_bytes(data)
        problem = check(path)
        if problem is not None:
            print(json.dumps({"mutant": number, "file": rel, "problem": problem}), flush=True)


def wait_measured(pid: int, timeout: float) -> tuple[int, int, bool]:
    """(wait status, peak resident bytes, whether it was killed for running past `timeout`) of the
    child process `pid` of a new session, reaped here. The peak is the child's own VmHWM, polled:
    wait4's ru_maxrss would also count the parent's resident size at the fork (Linux keeps the
    high-water mark of the image exec replaced), a pytest worker's ~200 MiB."""
    deadline = time.monotonic() + timeout
    peak = 0
    hung = False
    while True:
        peak = max(peak, _vm_hwm(pid))
        done, status, _usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, peak, hung
        if time.monotonic() > deadline and not hung:
            hung = True
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.01)


def _vm_hwm(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


@dataclass
class Limits:
    address_space: int = 1536 * MiB
    max_rss: int = 600 * MiB
    timeout: float = 60.0  # per batch of mutants


@dataclass
class Campaign:
    seed: int
    mutants: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    peak_rss: int = 0


def run_batch(
    seed: int, first: int, count: int, limits: Limits, campaign: Campaign, out: Path | None
) -> None:
    """One worker process over `count` mutants; its failures (and its death, hang or size) are
    added to the campaign."""
    with tempfile.TemporaryDirectory(prefix="fuzz-decoder-") as tmp:
        work = Path(tmp)

        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limits.address_space, limits.address_space))

        env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        env.pop("MYSQL_ROLLBACK_PURE_PYTHON", None)
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tools.fuzz_decoder",
                    "--worker",
                    str(seed),
                    str(first),
                    str(count),
                    tmp,
                ],
                stdout=stdout,
                stderr=stderr,
                preexec_fn=cap,
                cwd=REPO,
                env=env,
                start_new_session=True,
            )
            status, rss, hung = wait_measured(process.pid, limits.timeout)
            process.returncode = os.waitstatus_to_exitcode(status)
            stdout.seek(0)
            stderr.seek(0)
            lines, errors = stdout.read().decode(), stderr.read().decode()
        campaign.peak_rss = max(campaign.peak_rss, rss)
        current = work / "current"
        reached = int(current.read_text()) if current.exists() else first
        failures = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
        campaign.mutants += (reached - first + 1) if (hung or process.returncode) else count
        if hung:
            failures.append({"mutant": reached, "problem": f"hang: still running after {limits.timeout} s"})
        elif process.returncode:
            tail = errors.strip().splitlines()[-1:] or [""]
            failures.append(
                {"mutant": reached, "problem": f"worker ended with {process.returncode}: {tail[0]}"}
            )
        if rss > limits.max_rss:
            failures.append(
                {"mutant": reached, "problem": f"peak RSS {rss >> 20} MiB > {limits.max_rss >> 20} MiB"}
            )
        for failure in failures:
            failure["seed"] = seed
            rel, data = mutant(seed, failure["mutant"])
            failure.setdefault("file", rel)
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"seed{seed}-mutant{failure['mutant']}.bin").write_bytes(data)
                (out / f"seed{seed}-mutant{failure['mutant']}.json").write_text(json.dumps(failure) + "\n")
        campaign.failures.extend(failures)


def campaign(
    seed: int,
    mutants: int | None = None,
    seconds: float | None = None,
    batch: int = 50,
    limits: Limits | None = None,
    out: Path | None = None,
) -> Campaign:
    """Mutants 0.. of `seed` in worker batches, until `mutants` are checked or `seconds` have passed."""
    limits = limits or Limits()
    result = Campaign(seed)
    started = time.monotonic()
    first = 0
    while True:
        if mutants is not None and first >= mutants:
            break
        if seconds is not None and time.monotonic() - started >= seconds:
            break
        count = batch if mutants is None else min(batch, mutants - first)
        run_batch(seed, first, count, limits, result, out)
        first += count
    return result


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if args[:1] == ["--worker"]:
        worker(int(args[1]), int(args[2]), int(args[3]), Path(args[4]))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m tools.fuzz_decoder", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, help="run batches until this many seconds have passed")
    parser.add_argument("--mutants", type=int, help="stop after this many mutants")
    parser.add_argument("--batch", type=int, default=50, help="mutants per worker process")
    parser.add_argument("--out", type=Path, help="where failing mutants are written (with a .json note)")
    parser.add_argument("--address-space", type=int, default=1536, help="the worker's address space, MiB")
    parser.add_argument("--max-rss", type=int, default=600, help="the worker's peak resident memory, MiB")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a worker batch may take")
    options = parser.parse_args(args)
    if options.seconds is None and options.mutants is None:
        parser.error("give --seconds or --mutants")
    limits = Limits(options.address_space * MiB, options.max_rss * MiB, options.timeout)
    started = time.monotonic()
    result = campaign(options.seed, options.mutants, options.seconds, options.batch, limits, options.out)
    for failure in result.failures:
        print(json.dumps(failure))
    print(
        f"seed {result.seed}: {result.mutants} mutants in {time.monotonic() - started:.0f} s, "
        f"{len(result.failures)} failure(s), worker peak RSS {result.peak_rss >> 20} MiB",
        file=sys.stderr,
    )
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main())
