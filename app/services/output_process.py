"""A finished job's plan or change log produced in a process of its own, on the local engine.

Producing them runs the job's range again: planning, schema reads, decoding and rendering, most of
it Python. In a thread of the service that work takes turns on the GIL with the event loop that
answers requests (five executions producing their plans at once took the busy reads' p95 from
about 60 ms to several hundred). Here it runs in a child of the executions' fork server, at their
niceness, and the service's thread only waits for its answer. The child never starts a Spark
session of its own (a second JVM): it runs the local engine, whose forked workers use every core.
"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import Connection
from typing import Any

from app.services import engine, execution_process
from rollback import EXIT_INTERNAL, EngineKind, Filters, Options, RangeSpec, RollbackError

WAIT_SECONDS = 0.2


def _child(
    rng: RangeSpec,
    filters: Filters,
    options: Options,
    out: engine.Artifacts,
    answer: Connection,
    alive: Connection,
) -> None:
    os.nice(execution_process.NICENESS)
    # Planning several large files starts a pool of processes (rollback/pipeline/plan.py), which a daemon
    # process may not (as in job_process); this one still ends with the service (`alive`).
    multiprocessing.current_process().daemon = False
    options.engine = EngineKind.LOCAL

    def service_gone() -> bool:
        # only the service holds the other end of `alive`: it is readable (EOF) once the service ends
        return alive.poll(0)

    try:
        engine.run(rng, filters, options, out, lambda _p: None, service_gone)
        answer.send(None)
    except engine.Cancelled:
        answer.send(("cancelled", "", 0))
    except RollbackError as exc:
        answer.send(("rollback", exc.one_line(), exc.exit_code))
    except OSError as exc:
        answer.send(("os", exc.strerror or str(exc), exc.errno or 0))
    except Exception as exc:  # noqa: BLE001 - said in one line by the service
        answer.send(("internal", f"internal error ({type(exc).__name__}): {exc}", EXIT_INTERNAL))
    finally:
        answer.close()


def run(rng: RangeSpec, filters: Filters, options: Options, out: engine.Artifacts, stopping: Any) -> None:
    """engine.run in the child; raises what it raised (engine.Cancelled when `stopping` is set)."""
    ctx = execution_process.context()
    receive, send = ctx.Pipe(duplex=False)
    alive, held = ctx.Pipe(duplex=False)  # `held` stays here until the child has ended
    process = ctx.Process(
        target=_child,
        args=(rng, filters, options, out, send, alive),
        name="mysql-rollback-outputs",
        daemon=True,
    )
    process.start()
    send.close()
    alive.close()
    try:
        while not receive.poll(WAIT_SECONDS):
            if stopping.is_set():
                process.kill()
                raise engine.Cancelled()
            if not process.is_alive() and not receive.poll(0):
                raise RollbackError(
                    f"the process producing the job's outputs ended (exit code {process.exitcode})"
                )
        try:
            said: tuple[str, str, int] | None = receive.recv()
        except EOFError:
            raise RollbackError(
                f"the process producing the job's outputs ended (exit code {process.exitcode})"
            ) from None
    finally:
        receive.close()
        process.join(30)
        held.close()
    if said is None:
        return
    kind, message, code = said
    if kind == "cancelled":
        raise engine.Cancelled()
    if kind == "os":
        raise OSError(code, message)
    error = RollbackError(message)
    error.exit_code = code
    raise error
