"""The command lines binlog2sql and mysqlbinlog users type, against the scratch server: -h/-P/-u/-p,
a password with every special character in each credential form (DSN, -p, --defaults-file,
~/.my.cnf, --login-path, MYSQL_PWD, the prompt), a wrong password's one precise line, -R with the
server's file names, a time window from a start file, bare table names of the -d databases,
--sql-type, -B, --only-dml, --stop-never refused, and the --report of each outcome."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from urllib.parse import quote

import pytest

from tests.support import REPO
from tests.support.credentials import SPECIAL_PASSWORD, SPECIAL_USER, create_special_user, write_login_file
from tests.support.sources import run_cli_in_process

DB = "habits"
LOCAL = ("--engine", "local")


@pytest.fixture(scope="module")
def incident(scratch_server):
    """habits.orders and habits.items, then an incident in its own binlog file: 4 orders deleted, 2
    items updated, one order inserted, between two times a second apart from anything else."""
    create_special_user(scratch_server)
    scratch_server.run_sql(
        [
            f"DROP DATABASE IF EXISTS {DB}",
            f"CREATE DATABASE {DB}",
            f"CREATE TABLE {DB}.orders (id INT PRIMARY KEY, status VARCHAR(10))",
            f"CREATE TABLE {DB}.items (id INT PRIMARY KEY, qty INT)",
            f"INSERT INTO {DB}.orders VALUES " + ", ".join(f"({i}, 'paid')" for i in range(1, 11)),
            f"INSERT INTO {DB}.items VALUES (1, 1), (2, 2), (3, 3)",
        ]
    )
    scratch_server.flush_binary_logs()
    time.sleep(1.1)
    (start,) = scratch_server.query("SELECT NOW()")[0]
    rng = scratch_server.run_sql(
        [
            f"DELETE FROM {DB}.orders WHERE id > 6",
            f"UPDATE {DB}.items SET qty = qty * 10 WHERE id <= 2",
            f"INSERT INTO {DB}.orders VALUES (11, 'new')",
        ]
    )
    time.sleep(1.1)
    (stop,) = scratch_server.query("SELECT NOW()")[0]
    scratch_server.run_sql(f"UPDATE {DB}.items SET qty = 0 WHERE id = 3")  # after the window
    return {"rng": rng, "start": str(start), "stop": str(stop)}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No developer's ~/.my.cnf, $MYSQL_PWD or login file reaches a test; the spool lives in tmp."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.delenv("MYSQL_PWD", raising=False)
    monkeypatch.delenv("MYSQL_TEST_LOGIN_FILE", raising=False)
    monkeypatch.setenv("MYSQL_ROLLBACK_DATA_DIR", str(tmp_path / "data"))


def _window(incident) -> list[str]:
    return [
        "--start-file",
        incident["rng"].start_file,
        "--start-datetime",
        incident["start"],
        "--stop-datetime",
        incident["stop"],
    ]


def _connection(server) -> list[str]:
    return ["-h", server.host, "-P", str(server.port), "-u", SPECIAL_USER]


def _reverses_the_incident(script: str) -> None:
    for i in range(7, 11):
        assert f"INSERT INTO `{DB}`.`orders`" in script and f"VALUES ({i}, 'paid')" in script, script
    assert "DELETE FROM `habits`.`orders` WHERE `id`=11" in script, script
    assert script.count(f"UPDATE `{DB}`.`items`") == 2, script
    assert "`qty`=3" not in script  # the change after the window is not in it


def test_binlog2sql_command_line_with_the_password_attached(scratch_server, incident, capsys, tmp_path):
    report = tmp_path / "report.json"
    code, out, err = run_cli_in_process(
        capsys,
        "sql",
        f"-h{scratch_server.host}",
        f"-P{scratch_server.port}",
        f"-u{SPECIAL_USER}",
        f"-p{SPECIAL_PASSWORD}",
        "-d",
        DB,
        "-t",
        "orders",
        "items",
        *_window(incident),
        "-B",
        "--only-dml",
        "--report",
        str(report),
        *LOCAL,
    )
    assert code == 0, err
    _reverses_the_incident(out)
    facts = json.loads(report.read_text())
    assert facts["result"] == "ok" and facts["exit_code"] == 0 and facts["error"] is None
    assert {(c["table"], c["type"], c["rows"]) for c in facts["counts"]} == {
        (f"{DB}.orders", "delete", 4),
        (f"{DB}.orders", "insert", 1),
        (f"{DB}.items", "update", 2),
    }
    assert facts["range_asked"]["start_file"] == incident["rng"].start_file
    assert facts["range_asked"]["start_datetime"] == incident["start"]
    assert facts["range_read"]["files"] and facts["range_read"]["bytes"] > 0
    assert (
        SPECIAL_PASSWORD not in report.read_text()
        and quote(SPECIAL_PASSWORD, safe="") not in report.read_text()
    )


def test_mysqlbinlog_command_line_names_the_servers_files(scratch_server, incident, capsys, monkeypatch):
    monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
    code, out, err = run_cli_in_process(
        capsys,
        "flashback",
        "--read-from-remote-server",
        *_connection(scratch_server),
        "--start-datetime",
        incident["start"],
        "--stop-datetime",
        incident["stop"],
        incident["rng"].start_file,
        "--database",
        DB,
        *LOCAL,
    )
    assert code == 0, err
    _reverses_the_incident(out)


def test_a_binlog_file_after_a_multi_value_option_is_refused_not_read_as_a_name(
    scratch_server, incident, capsys, monkeypatch
):
    """-d takes several names: the server's file after it would be read as a database, and the range
    would silently be the time window searched in other files (README's example once read its files so).
    Refused, one line; with `--` before the files, the same command line works."""
    monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
    for option, short in (("--database", "-d"), ("-t", "-t")):
        code, out, err = run_cli_in_process(
            capsys,
            "flashback",
            "-R",
            *_connection(scratch_server),
            "--start-datetime",
            incident["start"],
            "--stop-datetime",
            incident["stop"],
            option,
            DB if option == "--database" else "orders",
            incident["rng"].start_file,
            *LOCAL,
        )
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert f"{incident['rng'].start_file}: a binlog file after {short}" in err, err
    code, out, err = run_cli_in_process(
        capsys,
        "flashback",
        "-R",
        *_connection(scratch_server),
        *_window(incident)[2:],
        *LOCAL,
        "--database",
        DB,
        "--",
        incident["rng"].start_file,
    )
    assert code == 0, err
    _reverses_the_incident(out)


@pytest.mark.parametrize("form", ["defaults-file", "my.cnf", "login-path"])
def test_a_host_in_the_option_files_is_the_server_for_start_file_and_r(
    scratch_server, incident, capsys, tmp_path, form
):
    """mysqlbinlog users keep the whole connection in ~/.my.cnf or a login path: no -h, no --server."""
    rng = incident["rng"]
    values = {
        "user": SPECIAL_USER,
        "password": SPECIAL_PASSWORD,
        "host": scratch_server.host,
        "port": str(scratch_server.port),
    }
    quoted = {k: v.replace('"', '\\"') for k, v in values.items()}
    option_file = "[client]\n" + "".join(f'{k} = "{v}"\n' for k, v in quoted.items())
    if form == "defaults-file":
        (tmp_path / "my.cnf").write_text(option_file)
        server = [f"--defaults-file={tmp_path / 'my.cnf'}"]
    elif form == "my.cnf":
        (tmp_path / "home" / ".my.cnf").write_text(option_file)
        server = []
    else:
        write_login_file(tmp_path / "home" / ".mylogin.cnf", {"ci": values})
        server = ["--login-path", "ci"]
    positions = ["--start-position", str(rng.start_position), "--stop-position", str(rng.stop_position)]
    code, out, err = run_cli_in_process(
        capsys, "flashback", *server, "--start-file", rng.start_file, *positions, "-d", DB, *LOCAL
    )
    assert code == 0, (form, err)
    _reverses_the_incident(out)
    code, out, err = run_cli_in_process(
        capsys, "flashback", *server, "-R", rng.start_file, *positions, "-d", DB, "-t", "orders", *LOCAL
    )
    assert code == 0, (form, err)
    assert out.count("INSERT INTO `habits`.`orders`") == 4 and "`items`" not in out, out
    code, out, err = run_cli_in_process(
        capsys,
        "fetch",
        *server,
        "--start-file",
        rng.start_file,
        *positions[2:],
        "--spool",
        str(tmp_path / "s"),
    )
    assert code == 0, (form, err)
    assert out.split()[0].endswith(rng.start_file), out


def test_sql_type_takes_binlog2sql_words_and_tables_take_their_database(scratch_server, incident, capsys):
    code, out, err = run_cli_in_process(
        capsys,
        "flashback",
        *_connection(scratch_server),
        f"--password={SPECIAL_PASSWORD}",
        *_window(incident),
        "-d",
        DB,
        "-t",
        "orders",
        "--sql-type",
        "DELETE",
        *LOCAL,
    )
    assert code == 0, err
    body = [line for line in out.splitlines() if not line.startswith("--")]
    assert sum(line.startswith("INSERT INTO") for line in body) == 4, out
    assert not any(line.startswith(("UPDATE", "DELETE")) for line in body), out


def test_a_bare_table_without_its_database_names_the_table_meant(
    scratch_server, incident, capsys, monkeypatch
):
    monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
    code, out, err = run_cli_in_process(
        capsys, "flashback", *_connection(scratch_server), *_window(incident), "-t", "orders", *LOCAL
    )
    assert code == 4 and out == "" and err.count("\n") == 1
    assert f"did you mean {DB}.orders?" in err


def test_stop_never_is_refused_with_its_reason(scratch_server, incident, capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, err = run_cli_in_process(
        capsys,
        "sql",
        *_connection(scratch_server),
        "--start-file",
        incident["rng"].start_file,
        "--stop-never",
        "--report",
        str(report),
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--stop-never: mysql-rollback reverses a closed range" in err
    facts = json.loads(report.read_text())
    assert (
        facts["result"] == "refused"
        and facts["exit_code"] == 2
        and facts["refusals"] == [err.split("error: ", 1)[1].strip()]
    )


@pytest.mark.parametrize("form", ["dsn", "defaults-file", "my.cnf", "login-path", "MYSQL_PWD"])
def test_a_password_with_every_special_character_works_in_each_form(
    scratch_server, incident, capsys, monkeypatch, tmp_path, form
):
    host_port = ["-h", scratch_server.host, "-P", str(scratch_server.port)]
    quoted = SPECIAL_PASSWORD.replace('"', '\\"')
    option_file = f'[client]\nuser = "{SPECIAL_USER}"\npassword = "{quoted}"\n'
    if form == "dsn":
        dsn = f"mysql://{quote(SPECIAL_USER, safe='')}:{quote(SPECIAL_PASSWORD, safe='')}@{scratch_server.host}:{scratch_server.port}/"
        server = ["--server", dsn]
    elif form == "defaults-file":
        (tmp_path / "ci.cnf").write_text(option_file)
        server = [*host_port, "--defaults-file", str(tmp_path / "ci.cnf")]
    elif form == "my.cnf":
        (tmp_path / "home" / ".my.cnf").write_text(option_file)
        server = host_port
    elif form == "login-path":
        login = tmp_path / "home" / ".mylogin.cnf"
        values = {"user": SPECIAL_USER, "password": SPECIAL_PASSWORD, "host": scratch_server.host}
        write_login_file(login, {"ci": {**values, "port": str(scratch_server.port)}})
        server = ["--login-path", "ci"]
    else:
        monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
        server = [*host_port, "-u", SPECIAL_USER]
    code, out, err = run_cli_in_process(capsys, "flashback", *server, *_window(incident), "-d", DB, *LOCAL)
    assert code == 0, (form, err)
    _reverses_the_incident(out)


def test_a_wrong_password_is_one_precise_line_and_a_report(scratch_server, incident, capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, err = run_cli_in_process(
        capsys,
        "flashback",
        *_connection(scratch_server),
        "-pnot-the-password",
        *_window(incident),
        "--report",
        str(report),
        *LOCAL,
    )
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert (
        f"cannot log in to {scratch_server.host}:{scratch_server.port} as 'ci@habits': access denied" in err
    )
    assert "not-the-password" not in err
    facts = json.loads(report.read_text())
    assert facts["exit_code"] == 2 and "access denied (check user and password)" in facts["error"]


def test_an_unencoded_at_sign_in_a_dsn_says_how_to_encode_it(scratch_server, capsys):
    dsn = f"mysql://{SPECIAL_USER}:{SPECIAL_PASSWORD}@{scratch_server.host}:{scratch_server.port}/"
    code, out, err = run_cli_in_process(capsys, "checksum", dsn, "-d", DB)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "percent-encoded (@ as %40" in err and "w/rd" not in err


def test_checksum_takes_the_mysql_options_too(scratch_server, incident, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
    report = tmp_path / "r.json"
    code, out, err = run_cli_in_process(
        capsys, "checksum", *_connection(scratch_server), "-d", DB, "--report", str(report)
    )
    assert code == 0, err
    assert sorted(json.loads(out)["tables"]) == [f"{DB}.items", f"{DB}.orders"]
    assert json.loads(report.read_text())["tables"] == [
        {"table": f"{DB}.items", "rows": 3},
        {"table": f"{DB}.orders", "rows": 7},
    ]


def test_p_alone_asks_on_the_terminal_without_echo(scratch_server, incident, tmp_path):
    """`-p` with no value, as in mysql: the prompt on the terminal, the password never echoed, and the
    next word (a file name here) not taken as the password."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "MYSQL_ROLLBACK_DATA_DIR": str(tmp_path / "data")}
    env.pop("MYSQL_PWD", None)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rollback.cli.commands",
            "flashback",
            "-R",
            *_connection(scratch_server),
            "-p",
            incident["rng"].start_file,
            "--start-datetime",
            incident["start"],
            "--stop-datetime",
            incident["stop"],
            "-d",
            DB,
            *LOCAL,
        ],
        cwd=REPO,
        env=env,
        stdin=secondary,
        stdout=subprocess.PIPE,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"Enter password:" not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, seen
            if select.select([primary], [], [], 0.5)[0]:
                seen += os.read(primary, 1024)
        os.write(primary, SPECIAL_PASSWORD.encode() + b"\n")
        out, _ = proc.communicate(timeout=120)
        while select.select([primary], [], [], 0.2)[0]:
            try:
                chunk = os.read(primary, 1024)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    assert proc.returncode == 0, seen.decode(errors="replace")
    assert SPECIAL_PASSWORD.encode() not in seen  # not echoed
    _reverses_the_incident(out.decode())


def test_p_alone_without_a_terminal_is_one_line(scratch_server, incident, capsys, monkeypatch):
    monkeypatch.setattr("rollback.cli.connection.terminal_available", lambda: False)
    code, out, err = run_cli_in_process(
        capsys, "flashback", *_connection(scratch_server), "-p", *_window(incident)
    )
    assert code == 2 and out == ""
    assert "-p without a value asks for the password, but there is no terminal to ask on" in err


def test_fetch_takes_the_mysql_options_and_reports_its_files(
    scratch_server, incident, capsys, monkeypatch, tmp_path
):
    monkeypatch.setenv("MYSQL_PWD", SPECIAL_PASSWORD)
    report = tmp_path / "fetch.json"
    rng = incident["rng"]
    code, out, err = run_cli_in_process(
        capsys,
        "fetch",
        *_connection(scratch_server),
        "--start-file",
        rng.start_file,
        "--stop-position",
        str(rng.stop_position),
        "--spool",
        str(tmp_path / "spool"),
        "--report",
        str(report),
    )
    assert code == 0, err
    facts = json.loads(report.read_text())
    assert facts["result"] == "ok" and facts["range_asked"]["start_file"] == rng.start_file
    assert facts["range_read"]["files"] == out.split() and out.split()[0].endswith(rng.start_file)
