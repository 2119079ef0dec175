"""Spark in local mode listens on loopback only; with a cluster master it authenticates with the
configured secret."""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path

from rollback.pipeline.session import network_conf


def _listening_inodes() -> dict[str, str]:
    """inode -> local address of every TCP socket in LISTEN state on this machine."""
    found: dict[str, str] = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A":
                continue
            hex_addr = local.split(":")[0]
            raw = bytes.fromhex(hex_addr)
            # /proc/net/tcp writes the address as 32-bit words in host byte order
            words = struct.unpack(f"<{len(raw) // 4}I", raw)
            found[inode] = socket.inet_ntop(family, struct.pack(f">{len(words)}I", *words))
    return found


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _loopback(address: str) -> bool:
    return (
        address.startswith("127.")
        or address in ("::1", "::ffff:127.0.0.1")
        or address.startswith("::ffff:127.")
    )


def test_the_local_driver_listens_on_loopback_only(spark):
    assert spark.range(1000).selectExpr("sum(id)").collect()[0][0] == 499500  # a job ran: every service is up
    jvm = spark.sparkContext._gateway.proc.pid
    listening = _listening_inodes()
    bound = {listening[i] for pid in (jvm, os.getpid()) for i in _socket_inodes(pid) if i in listening}
    assert bound, "the driver JVM listens on nothing: the check looks at the wrong process"
    assert all(_loopback(a) for a in bound), bound
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1" and conf.get("spark.ui.enabled") == "false"


def test_a_cluster_master_authenticates_with_the_configured_secret():
    assert network_conf("spark://spark-master:7077", "s3cret-from-config") == {
        "spark.ui.enabled": "false",
        "spark.authenticate": "true",
        "spark.authenticate.secret": "s3cret-from-config",
    }
    local = network_conf("local[*]", "ignored")
    assert local["spark.driver.host"] == "127.0.0.1" and "spark.authenticate" not in local
