"""An execution runs in a process of its own, started from a fork server that has the execution
code loaded: the statements, their checks and the record's writes do not take turns on the GIL
with the requests the service answers.

The process writes the record's progress itself (per-transaction commits before and after each
COMMIT, as execution_run.Recorder does), takes cancel and stop from the service through a pipe, and
sends back the values of the record that say how it ended; the service writes those. It dies with
the service: a killed service leaves no process applying statements behind it (the target rolls
its open transaction back, and the record says what was committed, as before).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import update

from app.db import Database
from app.models import Execution
from app.services.execution_run import Recorder, RunRequest, run_plan
from app.services.record_writer import RecordWriter
from rollback import EXIT_INTERNAL, EXIT_INTERRUPTED, interrupt_thread, kill_queries

if TYPE_CHECKING:
    from app.core.config import ServerConfig

WAIT_SECONDS = 0.2
# A cancelled execution answers at its next statement; one that has not after this long is stuck
# on a silent target, and its process is ended.
CANCEL_GRACE_SECONDS = 3.0
# Before that, in the process: a statement still running this long after the cancel is stopped with
# KILL QUERY from a second session (a lock wait, a long scan), then its session's socket is shut.
KILL_AFTER_SECONDS = 0.5
KILL_TIMEOUT_SECONDS = 1.0
# Below the service: the statements wait on the target mostly, and what they compute must not take
# the cores from the requests the service answers.
NICENESS = 10

_context: Any = None
_lock = threading.Lock()


def context() -> Any:
    """The fork server's context: executions, jobs (job_process.py) and the outputs produced on
    first need (output_process.py) start from it, with the service's code already loaded."""
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(
                [
                    "app.services.execution_process",
                    "app.services.executions",
                    "app.services.output_process",
                    "app.services.job_process",
                ]
            )
            _context = context
        return _context


def warm() -> None:
    """Start the fork server now, in the background, not at the first execution: loading the
    service's code into it took 1-3 s of that execution's time (bench/bench_apply.py). `serve` calls
    it once it listens."""
    import multiprocessing.forkserver

    context()
    threading.Thread(
        target=multiprocessing.forkserver.ensure_running, name="mysql-rollback-forkserver", daemon=True
    ).start()


def new_event() -> threading.Event:
    """The service's side of an execution's cancel (or stop): run() passes it on to the process."""
    return threading.Event()


def _watch_the_service(alive: Connection, cancel: threading.Event, stop: threading.Event) -> None:
    """Take "cancel" and "stop" from the service, and kill this process the moment the service
    ends: only the service holds the other end of `alive`, so reading it ends (EOF) when the
    service closes it or dies. (The fork server, this process's parent, outlives the service.)"""

    runs = threading.main_thread().ident or 0  # the thread that runs the plan and opens its sessions

    def stop_the_statement() -> None:
        time.sleep(KILL_AFTER_SECONDS)
        kill_queries(runs, KILL_TIMEOUT_SECONDS)
        time.sleep(KILL_AFTER_SECONDS)
        interrupt_thread(runs)  # a target that answered neither

    def watch() -> None:
        try:
            while True:
                word = alive.recv()
                if word == "cancel" and not cancel.is_set():
                    threading.Thread(
                        target=stop_the_statement, name="mysql-rollback-kill", daemon=True
                    ).start()
                (cancel if word == "cancel" else stop).set()
        except (EOFError, OSError):
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="mysql-rollback-service-watch", daemon=True).start()


def _child(
    db_url: str,
    plan: Path,
    target: ServerConfig,
    run: RunRequest,
    scrub: Callable[[str], str],
    out: Connection,
    alive: Connection,
) -> None:
    cancel, stop = threading.Event(), threading.Event()
    _watch_the_service(alive, cancel, stop)
    os.nice(NICENESS)
    opened: list[Database] = []

    def open_record() -> Callable[..., None]:
        """The record's write, its database connected (in the writer's thread, beside the preflight)."""
        db = Database(db_url)
        opened.append(db)
        with db.session() as session:
            session.connection()

        def write(**values: Any) -> None:
            with db.session() as session:
                session.execute(update(Execution).where(Execution.id == run.record_id).values(**values))
                session.commit()

        return write

    writer = RecordWriter(open_record)
    recorder = Recorder(writer.now, cancel, stop, writer.later)
    recorder.details = run.details
    try:
        values = run_plan(plan, target, run, recorder, scrub)
    finally:
        try:
            writer.close()  # every progress write in before the service writes how it ended
        finally:
            for db in opened:
                db.dispose()
    out.send(values)
    out.close()


def run(
    db_url: str,
    plan: Path,
    target: ServerConfig,
    run: RunRequest,
    scrub: Callable[[str], str],
    cancel: Any,
    stop: Any,
) -> dict[str, Any]:
    """Run the execution in its process and wait for it; the values of its record's outcome."""
    ctx = context()
    receive, send = ctx.Pipe(duplex=False)
    alive, held = ctx.Pipe(duplex=False)  # `held` stays here until the process has ended
    process = ctx.Process(
        target=_child,
        args=(db_url, plan, target, run, scrub, send, alive),
        name=f"mysql-rollback-execution-{run.record_id}",
        daemon=True,
    )
    process.start()
    send.close()
    alive.close()
    told: dict[str, float] = {}
    try:
        while True:
            for word, event in (("cancel", cancel), ("stop", stop)):
                if event.is_set() and word not in told:
                    told[word] = time.monotonic()
                    try:
                        held.send(word)
                    except OSError:
                        pass  # it has ended: its answer (or its absence) says how
            if "cancel" in told and time.monotonic() - told["cancel"] > CANCEL_GRACE_SECONDS:
                # It is waiting on a target that does not answer: ending the process closes its
                # session, and the target rolls back the open transaction when it sees that.
                process.kill()
                return {
                    "state": "cancelled",
                    "exit_code": EXIT_INTERRUPTED,
                    "error": (
                        f"cancelled; the target did not answer within {CANCEL_GRACE_SECONDS:g} s, so the "
                        "execution's session was closed (its open transaction is rolled back; transactions "
                        "committed before stay, as listed)"
                    ),
                }
            if receive.poll(WAIT_SECONDS):
                try:
                    values: dict[str, Any] = receive.recv()
                    return values
                except EOFError:
                    break  # it ended without an answer
            if not process.is_alive() and not receive.poll(0):
                break
    finally:
        receive.close()
        process.join(30)
        held.close()
    return {
        "state": "failed",
        "exit_code": EXIT_INTERNAL,
        "error": f"the execution's process ended without an outcome (exit code {process.exitcode})",
    }
