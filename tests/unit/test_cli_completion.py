"""`mysql-rollback completion bash` is a script bash runs: it completes commands, options of each
command (the habits of mysql and binlog2sql included) and file names where binlog files go."""

from __future__ import annotations

import subprocess

from rollback.cli import commands as cli


def _complete(script: str, words: list[str], tmp_path) -> list[str]:
    path = tmp_path / "completion.bash"
    path.write_text(script)
    line = " ".join(words)
    program = (
        f"source {path}\n"
        f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}\n"
        f"COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}\n"
        "_shtab_mysql_rollback\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_options_and_files(tmp_path, capsys):
    assert cli.main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert _complete(script, ["mysql-rollback", "fl"], tmp_path) == ["flashback"]
    assert "verify" in _complete(script, ["mysql-rollback", "ve"], tmp_path)
    assert _complete(script, ["mysql-rollback", "sql", "--sql"], tmp_path) == ["--sql-type"]
    assert _complete(script, ["mysql-rollback", "flashback", "--login"], tmp_path) == ["--login-path"]
    assert "--report" in _complete(script, ["mysql-rollback", "checksum", "--rep"], tmp_path)
    (tmp_path / "mysql-bin.000042").write_bytes(b"")
    assert _complete(script, ["mysql-rollback", "flashback", "mysql-bin.0"], tmp_path) == ["mysql-bin.000042"]


def test_zsh_and_tcsh_scripts_are_generated(capsys):
    for shell, marker in (("zsh", "#compdef mysql-rollback"), ("tcsh", "complete mysql-rollback")):
        assert cli.main(["completion", shell]) == 0
        assert marker in capsys.readouterr().out
