"""What an error may say to an API user: no password, and no path on the service host.

The engine names files by path (its errors carry the path and offset). Users know an uploaded
file by its name, a server's file by the server and its name, and the rest by where it lives in
the data dir; the paths are translated accordingly.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

from app.core.config import ServerConfig, Settings
from app.services.jobs import Scrubber


def _forms(path: Path) -> list[str]:
    """The ways a directory shows up in a message: as configured and resolved, with the separator."""
    forms = {str(path), str(path.resolve()), str(path.absolute())}
    return [form.rstrip("/") + "/" for form in forms if form not in (".", "")]


class Redactor(Scrubber):
    def __init__(self, servers: dict[str, ServerConfig], settings: Settings):
        super().__init__(servers)
        rules: list[tuple[str, str]] = []
        for form in _forms(settings.uploads_dir):
            rules.append((re.escape(form) + r"[0-9a-f]{32}/", ""))  # an upload's file: its name
        for server in servers.values():
            if server.binlog_dir is not None:
                rules += [(re.escape(form), f"{server.name}:") for form in _forms(server.binlog_dir)]
            for option, path in server.connection.files:  # as given, and as its DSN writes it
                rules += [
                    (re.escape(form), f"<{server.name}'s {option}>") for form in {path, quote(path, safe="/")}
                ]
        rules += [(re.escape(form), "") for form in _forms(settings.data_dir)]  # relative to the data dir
        rules.sort(key=lambda rule: len(rule[0]), reverse=True)
        self._paths = re.compile("|".join(f"({pattern})" for pattern, _ in rules)) if rules else None
        self._replacements = [replacement for _, replacement in rules]

    def __call__(self, text: str) -> str:
        text = super().__call__(text)
        if self._paths is None:
            return text
        return self._paths.sub(lambda m: self._replacements[(m.lastindex or 1) - 1], text)
