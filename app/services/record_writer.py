"""The writes of an execution's record from its process, in a thread of their own: the statements do
not wait for the job database.

A progress write goes in the background, and only the newest one waiting is written (each holds the
whole of what it writes). A write the crash record needs (the transaction about to commit, the ones
committed, an XA decision) waits until it and every write before it are in the database, as before.
The first write no longer waits for the database's first connection either: the thread opens it while
the execution's preflight runs (it cost the first batch of a 100k-row commit 35-40 ms in the service,
and each later progress write about 5 ms).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

Write = Callable[..., None]


class RecordWriter:
    """Runs `write(**values)` in its thread, in the order asked; `open_()` first (it returns the
    write). `later(**values)`: in the background, replacing a progress write not yet written.
    `now(**values)`: returns once written. A failed write is raised at the next call (or close)."""

    def __init__(self, open_: Callable[[], Write]):
        self._open = open_
        self._ready = threading.Condition()
        self._queue: list[tuple[dict[str, Any], bool]] = []  # values, and whether a progress write
        self._written = 0  # writes done (failed ones too)
        self._asked = 0
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="mysql-rollback-record", daemon=True)
        self._thread.start()

    def later(self, **values: Any) -> None:
        with self._ready:
            self._raise()
            if self._queue and self._queue[-1][1]:
                self._queue[-1] = (values, True)  # the newer progress says all the older one did
                return
            self._queue.append((values, True))
            self._asked += 1
            self._ready.notify_all()

    def now(self, **values: Any) -> None:
        with self._ready:
            self._raise()
            self._queue.append((values, False))
            self._asked += 1
            mine = self._asked
            self._ready.notify_all()
            while self._written < mine:
                self._ready.wait()
            self._raise()

    def close(self) -> None:
        """Every write asked for written (a failed one raised), then the thread ended."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        self._thread.join()
        with self._ready:
            self._raise()

    def _raise(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def _run(self) -> None:
        write: Write | None = None
        failed: BaseException | None = None
        try:
            write = self._open()
        except BaseException as exc:  # noqa: BLE001 - each write then fails with it, in the caller's thread
            failed = exc
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                values, _ = self._queue.pop(0)
            try:
                if write is None:
                    assert failed is not None
                    raise failed
                write(**values)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread, at its next call
                with self._ready:
                    self._error = exc
            with self._ready:
                self._written += 1
                self._ready.notify_all()
