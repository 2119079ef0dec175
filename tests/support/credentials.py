"""Credentials as MySQL users keep them, for the CLI habit tests: a scratch user whose password holds
every character a URL or an option file treats specially, and a `.mylogin.cnf` written the way MySQL's
mysql_config_editor writes it (so that --login-path is tested on a real file, not a stub)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from tests.support.mariadb import ScratchServer

# @ : / % # ? & and a space, plus "%40", which a DSN parser would decode to "@" if we did not encode it
SPECIAL_PASSWORD = "p@ss:w/rd%40#?& x"
SPECIAL_USER = "ci@habits"


def create_special_user(
    server: ScratchServer, user: str = SPECIAL_USER, password: str = SPECIAL_PASSWORD
) -> None:
    conn = server.connect()
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")  # the tests read the binlog: keep this out of it
            for host in ("%", "localhost"):
                cur.execute("DROP USER IF EXISTS %s@%s", (user, host))
                cur.execute("CREATE USER %s@%s IDENTIFIED BY %s", (user, host, password))
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO {conn.escape(user)}@{conn.escape(host)}")
    finally:
        conn.close()


def write_login_file(path: Path, groups: dict[str, dict[str, str]]) -> None:
    """`.mylogin.cnf`: 4 unused bytes, a 20-byte key, then each line AES-128-ECB encrypted with the key
    folded to 16 bytes, PKCS#7-padded and preceded by its length (MySQL's mysql_config_editor format)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key = os.urandom(20)
    folded = bytearray(16)
    for i, byte in enumerate(key):
        folded[i % 16] ^= byte
    encryptor = Cipher(algorithms.AES(bytes(folded)), modes.ECB()).encryptor()
    out = bytearray(b"\0\0\0\0" + key)
    for group, values in groups.items():
        lines = [f"[{group}]\n", *(f'{k} = "{v}"\n' for k, v in values.items())]
        for line in lines:
            data = line.encode()
            pad = 16 - len(data) % 16
            cipher = encryptor.update(data + bytes([pad]) * pad)
            out += struct.pack("<i", len(cipher)) + cipher
    path.write_bytes(bytes(out))
    path.chmod(0o600)
