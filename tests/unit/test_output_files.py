"""An output path keeps what it is: a regular file is replaced whole (its mode and owner kept), a
device or FIFO is written through, a link or a file with other hard links keeps its inode, and a
directory or block device is refused before anything runs. The suite runs as root, where a rename over
/dev/null would turn the machine's null device into a regular file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rollback.base.output_files import OutputPath, OutputRefused, Way, write_bytes
from rollback.cli import commands as cli

BINLOG = "blackbeam__rust_mysql_common/test-data/binlogs/mariadb-bin.000001"
ROOT = os.geteuid() == 0


def _flashback(corpus_dir: Path, *out: str) -> int:
    return cli.main(["flashback", str(corpus_dir / BINLOG), "--engine", "local", "--quiet", *out])


def test_a_new_file_appears_only_when_complete(tmp_path):
    target = tmp_path / "r.sql"
    out = OutputPath(target)
    assert out.way is Way.REPLACE and out.staging == tmp_path / "r.sql.part"
    with open(out.staging, "wb") as f:
        f.write(b"x")
    assert not target.exists()
    out.commit()
    out.discard()
    assert target.read_bytes() == b"x" and sorted(os.listdir(tmp_path)) == ["r.sql"]


def test_a_regular_file_is_replaced_keeping_its_mode_and_owner(tmp_path):
    target = tmp_path / "r.sql"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    if ROOT:
        os.chown(target, 1234, 4321)
    write_bytes(OutputPath(target), b"new")
    after = os.stat(target)
    assert target.read_bytes() == b"new" and stat.S_IMODE(after.st_mode) == 0o640
    if ROOT:
        assert (after.st_uid, after.st_gid) == (1234, 4321)


def test_an_unfinished_output_leaves_the_old_file_and_no_part(tmp_path):
    target = tmp_path / "r.sql"
    target.write_bytes(b"old")
    out = OutputPath(target)
    with pytest.raises(RuntimeError):
        try:
            with open(out.staging, "wb") as f:
                f.write(b"half")
                raise RuntimeError("the job failed")
        finally:
            out.discard()
    assert target.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["r.sql"]


def test_a_file_with_other_hard_links_keeps_its_inode_and_links(tmp_path):
    target, other = tmp_path / "r.sql", tmp_path / "other-name.sql"
    target.write_bytes(b"old")
    os.link(target, other)
    inode = os.stat(target).st_ino
    out = OutputPath(target)
    assert out.way is Way.IN_PLACE
    write_bytes(out, b"new contents")
    assert os.stat(target).st_ino == inode and other.read_bytes() == b"new contents"
    assert sorted(os.listdir(tmp_path)) == ["other-name.sql", "r.sql"]


def test_a_symlink_stays_a_link_and_its_target_gets_the_output(tmp_path):
    real, link = tmp_path / "real.sql", tmp_path / "link.sql"
    real.write_bytes(b"old")
    os.chmod(real, 0o600)
    link.symlink_to(real)
    write_bytes(OutputPath(link), b"through the link")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == b"through the link" and stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["link.sql", "real.sql"]


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    os.chmod(fifo, 0o620)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    out = OutputPath(fifo)
    assert out.way is Way.THROUGH and out.directory is None
    write_bytes(out, b"to the reader")
    reader.join(10)
    assert read == [b"to the reader"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_IMODE(os.lstat(fifo).st_mode) == 0o620


@pytest.mark.skipif(not ROOT, reason="mknod needs root; the suite and CI run as root")
def test_a_character_device_is_written_through(tmp_path):
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    write_bytes(null, b"gone")
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert sorted(os.listdir(tmp_path)) == ["null"]


@pytest.mark.parametrize("kind", ["directory", "block device"])
def test_a_directory_or_block_device_is_refused_with_one_line(tmp_path, kind):
    if kind == "directory":
        path = tmp_path / "d"
        path.mkdir()
    else:
        if not ROOT:
            pytest.skip("mknod needs root; the suite and CI run as root")
        path = tmp_path / "blk"
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    with pytest.raises(OutputRefused, match=f"is a {kind}; give a file path"):
        OutputPath(path)


def test_flashback_to_dev_null_leaves_dev_null_a_device(corpus_dir, tmp_path, capsys):
    # The machine's own /dev/null, as the execution tests and DBAs use it.
    before = os.lstat("/dev/null")
    assert _flashback(corpus_dir, "-o", "/dev/null", "--plan", "/dev/null", "--report", "/dev/null") == 0
    after = os.lstat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_rdev, after.st_mode) == (before.st_rdev, before.st_mode)
    assert not [p for p in os.listdir("/dev") if p.startswith(("null.part", ".mysql-rollback-"))]
    assert "Traceback" not in capsys.readouterr().err


def test_flashback_to_dev_stdout_writes_the_script_to_the_pipe_and_keeps_the_link(corpus_dir, tmp_path):
    code = (
        "import sys; from rollback.cli.commands import main; "
        f"sys.exit(main(['flashback', {str(corpus_dir / BINLOG)!r}, '--engine', 'local', '--quiet', '-o', '/dev/stdout']))"
    )
    link = os.readlink("/dev/stdout")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("-- ") and ("INSERT INTO" in done.stdout or "DELETE FROM" in done.stdout)
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == link


def test_flashback_through_a_fifo_and_a_symlink(corpus_dir, tmp_path, capsys):
    real = tmp_path / "real.sql"
    real.write_bytes(b"old")
    link = tmp_path / "link.sql"
    link.symlink_to(real)
    assert _flashback(corpus_dir, "-o", str(link)) == 0
    assert link.is_symlink() and real.read_text().startswith("-- ")
    fifo = tmp_path / "script.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    assert _flashback(corpus_dir, "-o", str(fifo)) == 0
    reader.join(60)
    assert read and read[0] == real.read_bytes()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["link.sql", "real.sql", "script.fifo"]


def test_flashback_to_a_directory_is_refused_before_the_job_runs(corpus_dir, tmp_path, capsys):
    assert _flashback(corpus_dir, "-o", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "is a directory; give a file path" in err
    assert os.listdir(tmp_path) == []
