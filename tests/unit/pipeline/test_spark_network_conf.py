"""The Spark network settings: loopback in local mode, the Python workers over Unix domain sockets in a
private folder; with a cluster master, authentication with the configured secret."""

from __future__ import annotations

import stat
import tempfile
import uuid
from pathlib import Path

from rollback.pipeline.session import network_conf, python_sockets


def test_a_cluster_master_authenticates_with_the_configured_secret():
    assert network_conf("spark://spark-master:7077", "s3cret-from-config") == {
        "spark.ui.enabled": "false",
        "spark.authenticate": "true",
        "spark.authenticate.secret": "s3cret-from-config",
    }
    local = network_conf("local[*]", "ignored")
    assert local["spark.driver.host"] == "127.0.0.1" and "spark.authenticate" not in local


def test_a_local_master_talks_to_its_python_workers_over_sockets_in_a_private_folder():
    conf = python_sockets("local[2]")  # in the temporary folder (/tmp here: pytest's tmp_path is too deep)
    folder = Path(conf["spark.python.unix.domain.socket.dir"])
    try:
        assert conf["spark.python.unix.domain.socket.enabled"] == "true"
        assert folder.parent == Path(tempfile.gettempdir()) and stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert len(str(folder / f".{uuid.uuid4()}.sock")) <= 107
    finally:
        folder.rmdir()
    assert python_sockets("spark://spark-master:7077") == {}


def test_a_temporary_folder_too_deep_for_a_socket_path_keeps_tcp(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert python_sockets("local[1]") == {}
    assert list(deep.iterdir()) == []
