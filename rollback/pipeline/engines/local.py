"""The local engine: the partitions of a job run on this machine, in this process or in forked ones.

One process runs them in order. With `processes` > 1 and more than one partition, a pool of that
many forked processes runs them (the parent only waits and collects): forking copies the imported
engine and the compiled core, so a worker starts in a few milliseconds, where a fresh interpreter
would spend a tenth of a second importing. Fork only when this process runs no other thread (a
thread holding a lock at the fork would leave it held forever in the child: the service's worker
threads, a terminal's progress display); otherwise the partitions run in order here, as before.
Both ways give the same summaries and the same part files.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import threading

from rollback.pipeline.engines.base import JobProgress
from rollback.pipeline.partition import JobSpec, PartitionProgress, run_partition
from rollback.pipeline.parts import Summary
from rollback.pipeline.plan import Partition

# A range from this size on runs in forked workers (one per usable CPU, PARTITIONS_PER_SLOT
# partitions each); below it, forking and merging more parts cost more than a second core gains.
FORK_BYTES = 4 << 20


class LocalEngine:
    def __init__(self, processes: int = 1) -> None:
        self.processes = processes

    def run(
        self, job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
    ) -> list[Summary]:
        if self.processes > 1 and len(partitions) > 1 and can_fork():
            return run_forked(job, partitions, progress, self.processes)
        return run_local(job, partitions, progress)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


def run_local(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None = None
) -> list[Summary]:
    """Summaries of the partitions in order; stops after the first one that failed."""
    summaries: list[Summary] = []
    bytes_before = events_before = 0
    for part in partitions:
        note: PartitionProgress | None = None
        if progress is not None:
            note = _offset(progress, bytes_before, events_before)
        summary = run_partition(job, part, note)
        summaries.append(summary)
        if summary.error is not None:
            break
        bytes_before += part.size
        events_before += part.events
    return summaries


def run_forked(
    job: JobSpec, partitions: list[Partition], progress: JobProgress | None, processes: int
) -> list[Summary]:
    """run_local's summaries, the partitions run by `processes` forked workers. Each worker is handed
    the next partition (largest first, so that no large one starts last) when it reports the last
    one; progress is told as each partition ends. Plain os.fork and pipes: the job and the partitions
    are inherited, only partition numbers go to a worker and pickled summaries come back
    (multiprocessing's pool costs more to import and start than a small range takes to run)."""
    pending = sorted(range(len(partitions)), key=lambda i: -partitions[i].size)
    workers: dict[int, _Worker] = {}  # by the file descriptor its results come on
    done: dict[int, Summary] = {}
    failure: BaseException | None = None
    selector = selectors.DefaultSelector()
    try:
        for _ in range(min(processes, len(partitions))):
            worker = _Worker.start(job, partitions, [fd for w in workers.values() for fd in w.fds()])
            workers[worker.results] = worker
            selector.register(worker.results, selectors.EVENT_READ)
            worker.hand(pending.pop(0) if pending else None)
        bytes_done = events_done = 0
        while workers:
            for key, _events in selector.select():
                worker = workers[int(key.fd)]
                for position, outcome in worker.receive():
                    if isinstance(outcome, BaseException):
                        failure = failure or outcome
                        pending.clear()
                    else:
                        done[position] = outcome
                        bytes_done += partitions[position].size
                        events_done += partitions[position].events
                        if progress is not None:
                            progress(bytes_done, events_done)
                    worker.hand(pending.pop(0) if pending else None)
                if worker.ended:
                    selector.unregister(worker.results)
                    del workers[worker.results]
                    status = worker.reap()
                    if worker.busy is not None and failure is None:
                        failure = RuntimeError(f"a local worker process ended unexpectedly ({status})")
    finally:
        selector.close()
        for worker in workers.values():  # only after an error here (an interrupt): stop the rest
            worker.kill()
    if failure is not None:
        raise failure
    summaries: list[Summary] = []
    for position in range(len(partitions)):  # in order, up to the first failure, as run_local gives them
        summary = done[position]
        summaries.append(summary)
        if summary.error is not None:
            break
    return summaries


_FRAME = struct.Struct("<Q")  # the byte length of the pickled (partition number, summary) after it


class _Worker:
    """One forked worker: partition numbers go in through one pipe, (number, summary or exception)
    frames come back through another; no number (the pipe closed) ends it."""

    def __init__(self, pid: int, tasks: int, results: int):
        self.pid = pid
        self.tasks: int | None = tasks
        self.results = results
        self.busy: int | None = None  # the partition it runs
        self.ended = False
        self._buffer = bytearray()

    @classmethod
    def start(cls, job: JobSpec, partitions: list[Partition], others: list[int]) -> _Worker:
        """Fork a worker; `others`: the pipe ends of the workers before it, which it must not hold
        open (a worker sees the end of its tasks only when every copy of their pipe is closed)."""
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the caller's code
            code = 0
            try:
                for fd in (task_write, result_read, *others):
                    os.close(fd)
                _serve(job, partitions, task_read, result_write)
            except BaseException:  # noqa: BLE001 - _serve reports what it can; nothing may unwind
                code = 1
            finally:
                os._exit(code)
        os.close(task_read)
        os.close(result_write)
        return cls(pid, task_write, result_read)

    def fds(self) -> list[int]:
        return [self.results] if self.tasks is None else [self.tasks, self.results]

    def hand(self, position: int | None) -> None:
        """Give the worker its next partition, or (None) tell it there is none."""
        if self.tasks is None or self.busy is not None:
            return
        if position is None:
            os.close(self.tasks)
            self.tasks = None
            return
        self.busy = position
        os.write(self.tasks, position.to_bytes(4, "little"))

    def receive(self) -> list[tuple[int, Summary | BaseException]]:
        """The frames that arrived whole; at the end of its output, `ended` is set."""
        data = os.read(self.results, 1 << 16)
        if not data:
            self.ended = True
            return []
        self._buffer += data
        frames: list[tuple[int, Summary | BaseException]] = []
        while len(self._buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self._buffer)
            if len(self._buffer) < _FRAME.size + size:
                break
            frames.append(pickle.loads(self._buffer[_FRAME.size : _FRAME.size + size]))
            del self._buffer[: _FRAME.size + size]
            self.busy = None
        return frames

    def reap(self) -> str:
        if self.tasks is not None:
            os.close(self.tasks)
            self.tasks = None
        os.close(self.results)
        _pid, status = os.waitpid(self.pid, 0)
        return f"exit status {os.waitstatus_to_exitcode(status)}"

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.reap()


def _serve(job: JobSpec, partitions: list[Partition], tasks: int, results: int) -> None:
    """The worker's loop: run each partition it is handed, send back its summary (or the exception
    that stopped it, after which it takes no more)."""
    while True:
        given = os.read(tasks, 4)  # written whole by one os.write: a pipe never splits 4 bytes
        if len(given) < 4:
            return
        position = int.from_bytes(given, "little")
        try:
            outcome: Summary | BaseException = run_partition(job, partitions[position])
        except BaseException as exc:  # noqa: BLE001 - the parent raises it
            outcome = exc
        try:
            payload = pickle.dumps((position, outcome))
        except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its text
            payload = pickle.dumps((position, RuntimeError(f"{type(outcome).__name__}: {outcome} ({exc})")))
        frame = _FRAME.pack(len(payload)) + payload
        while frame:
            frame = frame[os.write(results, frame) :]
        if isinstance(outcome, BaseException):
            return


def _offset(progress: JobProgress, bytes_before: int, events_before: int) -> PartitionProgress:
    return lambda done, events: progress(bytes_before + done, events_before + events)
