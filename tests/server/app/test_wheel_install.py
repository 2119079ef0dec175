"""The package as a wheel (`pip install .`, and the Docker image built from it): installed into a
fresh virtualenv, away from the checkout, `mysql-rollback serve` on a fresh data dir applies its
migrations and answers /health with no setting but the data dir.

Building the wheel compiles the core; at -O0, from the C file the checkout's build already generated
(the wheel's contents are what this checks, not the core's speed)."""

from __future__ import annotations

import os
import shutil
import site
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx

from tests.support import REPO


def test_an_installed_wheel_serves_with_no_extra_setting(service_process, tmp_path):
    # built from a copy of what the Dockerfile's build stage copies: pip builds in the tree it is given
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("rollback", "app", "migrations"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(wheels),
            ".",
        ],
        cwd=source,
        check=True,
        capture_output=True,
        env=dict(os.environ, CFLAGS="-O0 -g0"),
    )
    (wheel,) = wheels.glob("mysql_rollback-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "app/_migrations/env.py" in names and any(n.startswith("app/_migrations/versions/") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    # The dependencies come from this run's environment (no index here); the package itself only from
    # the wheel: a plain path line in a .pth file adds the directory without running its own .pth
    # files, so the checkout's editable install is not seen.
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    where = subprocess.run(
        [str(python), "-c", "import app, rollback; print(app.__file__); print(rollback.hot_path())"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert where[0].startswith(purelib), where

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MYSQL_ROLLBACK_")}
    env["MYSQL_ROLLBACK_DATA_DIR"] = str(tmp_path / "data")
    env["MYSQL_ROLLBACK_WARM_SPARK"] = "false"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(venv / "bin" / "mysql-rollback"), "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                if answer.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert answer.json()["status"] == "ok"
        assert "Running upgrade" in log.read_text()
        assert (tmp_path / "data" / "jobs.sqlite3").exists()
    finally:
        process.terminate()
        process.wait(30)
