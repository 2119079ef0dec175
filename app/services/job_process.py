"""A job's Python side in a process of its own: the source resolved, the range planned, the schemas
read and proved, the local engine's partitions, the merge and the script's transaction list.

In a thread of the service that work takes turns on the GIL with the event loop that answers
requests (two large jobs beside it took the busy reads' p95 to about 200 ms: bench/README.md).
The process starts from the executions' fork server, at their niceness. The service's thread
relays for it: it writes the progress the process sends (its own commits, so that the answers
cache replaces this job's answer only), and runs the partitions of a Spark job on the service's
warm session (a process has one Spark session: the job's process starting its own would start a
second JVM and lose the warm workers), so the Spark driver stays in the service while the rest of
the job does not. Cancel and stop go to the process, which takes them at its next progress step
as the job in a thread did; a process that has not ended CANCEL_GRACE_SECONDS later (waiting on a
silent server) is killed, which closes its sessions.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import rollback
from app.core.config import ServerConfig, Settings
from app.db import Database
from app.metrics import Metrics
from app.models import Job
from app.services import engine, execution_process
from app.services.jobs import JobRunner, Scrubber
from rollback import EXIT_INTERNAL, RollbackError

log = logging.getLogger("mysql_rollback.jobs")

WAIT_SECONDS = 0.2
CANCEL_GRACE_SECONDS = 3.0
# The engine's job modules (about 0.2 s of imports), loaded once where this module is: in the fork
# server, which preloads it, rather than in each job's process.
_ENGINE = rollback.generate


def _error(message: str, code: int) -> RollbackError:
    error = RollbackError(message)
    error.exit_code = code
    return error


# ---- in the job's process


class _Service:
    """The process's end of the pipe to the service's thread."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.cancel = False
        self.asking = False

    def send(self, *message: Any) -> None:
        self.conn.send(message)

    def cancelled(self) -> bool:
        """Whether the service said "cancel" (or ended: its end of the pipe closed)."""
        if not self.cancel and not self.asking and self.conn.poll(0):
            try:
                self.cancel = self.conn.recv()[0] == "cancel"  # nothing else comes unasked
            except EOFError:
                self.cancel = True
        return self.cancel

    def ask(self, *message: Any, on_tick: Any = None) -> tuple:
        """The service's answer to `message`; its ticks of progress meanwhile go to `on_tick`."""
        self.send(*message)
        self.asking = True
        try:
            while True:
                try:
                    answer = self.conn.recv()
                except EOFError:
                    raise engine.Cancelled() from None  # the service ended
                if answer[0] == "cancel":
                    self.cancel = True
                elif answer[0] == "tick":
                    if on_tick is not None:
                        on_tick(*answer[1:])
                else:
                    return tuple(answer)
        finally:
            self.asking = False


class _LentSpark:
    """The service's Spark session, reached through the pipe (rollback's LentSpark)."""

    def __init__(self, service: _Service):
        self.service = service

    def slots(self) -> int:
        return int(self.service.ask("slots")[1])

    def run(self, job: Any, partitions: list[Any], progress: Any = None) -> list[Any]:
        answer = self.service.ask("spark", job, partitions, on_tick=progress)
        if answer[0] == "summaries":
            return list(answer[1])
        _, kind, message, code = answer
        if kind == "cancelled":
            raise engine.Cancelled()
        raise _error(message, code)


class _InProcess(JobRunner):
    """The job's runner in its process: the values it would write go to the service's thread."""

    def __init__(self, db: Database, settings: Settings, servers: dict[str, ServerConfig], scrub: Scrubber):
        super().__init__(db, settings, servers, Metrics(db), scrub)
        self.service: _Service | None = None

    def _set(self, job_id: str, **values: Any) -> None:
        assert self.service is not None
        self.service.send("set", values)


def _child(
    db_url: str,
    settings: Settings,
    servers: dict[str, ServerConfig],
    scrub: Scrubber,
    spark_ready: bool,
    job_id: str,
    out_dir: Path,
    conn: Connection,
) -> None:
    os.nice(execution_process.NICENESS)
    # Planning several large files starts a pool of processes (rollback/pipeline/plan.py), which a
    # daemon process may not; this one still ends with the service (told, or its pipe closed, at
    # its next progress step).
    multiprocessing.current_process().daemon = False
    service = _Service(conn)
    db = Database(db_url)
    runner = _InProcess(db, settings, servers, scrub)
    runner.service = service
    runner.spark_ready = lambda: spark_ready
    runner.spark = _LentSpark(service)
    try:
        with db.session() as session:
            job = session.get(Job, job_id)
        assert job is not None
        service.send("done", runner._execute(job, out_dir, service.cancelled))
    except engine.Cancelled:
        service.send("cancelled")
    except RollbackError as exc:
        service.send("rollback", exc.one_line(), exc.exit_code)
    except OSError as exc:
        service.send("os", exc.errno or 0, exc.strerror or str(exc))
    except Exception as exc:  # noqa: BLE001 - said in one line by the service, which logs the traceback
        message = f"internal error ({type(exc).__name__}): {' '.join(str(exc).split())}"
        service.send("internal", message, traceback.format_exc())
    finally:
        db.dispose()
        conn.close()


# ---- in the service


class _Relay:
    """The service's side: what the process sends, and its Spark partitions run here."""

    def __init__(self, runner: JobRunner, job_id: str, conn: Connection, cancel: threading.Event):
        self.runner = runner
        self.job_id = job_id
        self.conn = conn
        self.cancel = cancel
        self.cancel_told: float | None = None

    def stopped(self) -> bool:
        return self.cancel.is_set() or self.runner.stopping.is_set()

    def tell_cancel(self) -> None:
        if self.cancel_told is None and self.stopped():
            self.cancel_told = time.monotonic()
            try:
                self.conn.send(("cancel",))
            except OSError:
                pass  # it has ended: its answer (or its absence) says how

    def take(self, message: tuple) -> tuple | None:
        """Handle one message; the outcome's when it is one."""
        kind = message[0]
        if kind == "set":
            self.runner.record(self.job_id, **message[1])
        elif kind == "slots":
            self.conn.send(("slots", self._spark().slots()))
        elif kind == "spark":
            self.conn.send(self._run_spark(message[1], message[2]))
        else:
            return message
        return None

    def _spark(self) -> Any:
        settings = self.runner.settings
        return rollback.SparkEngine(settings.spark_master, settings.work_dir)

    def _run_spark(self, job: Any, partitions: list[Any]) -> tuple:
        def tick(done: int, events: int) -> None:
            if self.stopped():
                raise engine.Cancelled()  # cancels the Spark job (engines/spark.py)
            while self.conn.poll(0):  # the progress the last tick caused
                self.take(self.conn.recv())
            self.conn.send(("tick", done, events))

        log.info("job %s: %d partition(s) on the service's Spark session", self.job_id, len(partitions))
        try:
            return ("summaries", self._spark().run(job, partitions, tick))
        except engine.Cancelled:
            return ("failed", "cancelled", "", 0)
        except RollbackError as exc:
            return ("failed", "rollback", exc.one_line(), exc.exit_code)
        except Exception as exc:  # noqa: BLE001 - the job's process ends with it, in one line
            log.error("job %s: Spark failed:\n%s", self.job_id, self.runner.scrub(traceback.format_exc()))
            return ("failed", "internal", f"internal error ({type(exc).__name__}): {exc}", EXIT_INTERNAL)


def run(runner: JobRunner, job_id: str, out_dir: Path, cancel: threading.Event) -> dict[str, Any]:
    """runner._execute in the job's process: the values of the job's record, or what it raised
    (engine.Cancelled once cancelled or stopped, RollbackError, OSError)."""
    ctx = execution_process.context()
    here, there = ctx.Pipe()
    process = ctx.Process(
        target=_child,
        args=(
            runner.db.url,
            runner.settings,
            runner.servers,
            runner.scrub,
            runner.spark_ready(),
            job_id,
            out_dir,
            there,
        ),
        name=f"mysql-rollback-job-{job_id}",
        daemon=True,
    )
    process.start()
    there.close()
    relay = _Relay(runner, job_id, here, cancel)
    outcome: tuple | None = None
    try:
        while outcome is None:
            relay.tell_cancel()
            if relay.cancel_told is not None and time.monotonic() - relay.cancel_told > CANCEL_GRACE_SECONDS:
                process.kill()  # waiting on a server that does not answer: its sessions close with it
                raise engine.Cancelled()
            if here.poll(WAIT_SECONDS):
                try:
                    outcome = relay.take(here.recv())
                except (EOFError, BrokenPipeError, ConnectionResetError):
                    break  # it ended without an outcome
            elif not process.is_alive() and not here.poll(0):
                break
    finally:
        here.close()
        process.join(5)
        if process.is_alive():  # it has nothing more to say, or the service stopped listening
            process.kill()
            process.join()
    if outcome is None:
        raise RollbackError(f"the job's process ended without an outcome (exit code {process.exitcode})")
    kind = outcome[0]
    if kind == "done":
        return dict(outcome[1])
    if kind == "cancelled":
        raise engine.Cancelled()
    if kind == "os":
        raise OSError(outcome[1], outcome[2])
    if kind == "internal":
        log.error("job %s: internal error in its process:\n%s", job_id, runner.scrub(outcome[2]))
        raise _error(outcome[1], EXIT_INTERNAL)
    raise _error(outcome[1], outcome[2])
