"""A finished job's execution plan and change log, produced when first needed.

A job writes only the script unless it asks for more (`options.outputs`). The first execution (or
conflict check) needs the plan, the first read of the change log needs the change log: the engine
runs the job's range again and writes them beside the script (the change log alone in the engine's
`changes` mode, which renders nothing). The plan is kept only if that run
gives the same statements byte for byte (everything after the header's comment lines, which name
the spooled files), so that what is executed is what was shown; a range whose input changed since
(a server's binlog purged or rewritten) is an error that says so.
"""

from __future__ import annotations

import logging
import mmap
import threading
from pathlib import Path

from app.models import Job
from app.services import artifacts, engine, output_process, retention
from app.services.jobs import CHANGES, PLAN, JobRunner
from rollback import RollbackError

log = logging.getLogger("mysql_rollback.jobs")

RERUN_SCRIPT = "rerun.sql"


# Where a script's statements start: the session settings after the header (a comment line holds
# no newline, so this cannot be inside one).
BODY_MARK = b"\nSET NAMES utf8mb4;\n"
CHUNK = 8 << 20


def same_statements(a: Path, b: Path) -> bool:
    """Whether two scripts hold the same bytes from their session settings on."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        if a.stat().st_size == 0 or b.stat().st_size == 0:
            return a.stat().st_size == b.stat().st_size
        with (
            mmap.mmap(fa.fileno(), 0, access=mmap.ACCESS_READ) as ma,
            mmap.mmap(fb.fileno(), 0, access=mmap.ACCESS_READ) as mb,
        ):
            start_a, start_b = ma.find(BODY_MARK), mb.find(BODY_MARK)
            if start_a < 0 or start_b < 0 or len(ma) - start_a != len(mb) - start_b:
                return False
            for offset in range(0, len(ma) - start_a, CHUNK):
                if (
                    ma[start_a + offset : start_a + offset + CHUNK]
                    != mb[start_b + offset : start_b + offset + CHUNK]
                ):
                    return False
    return True


class OutputsChanged(RollbackError):
    """The job's range no longer gives the script it gave."""


class Outputs:
    def __init__(self, runner: JobRunner):
        self.runner = runner
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, job_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(job_id, threading.Lock())

    def plan(self, job_id: str) -> Path:
        """The job's execution plan, produced now if it does not exist yet."""
        return self.ensure(job_id, {"plan"})[0]

    def changes(self, job_id: str) -> Path:
        """The job's change log (JSON lines with a line index), produced now if it does not exist yet."""
        return self.ensure(job_id, {"changes"})[-1]

    def ensure(self, job_id: str, wanted: set[str]) -> list[Path]:
        """The paths of the `wanted` outputs ("plan", "changes", in that order), made when missing.
        One run at a time per job: a second caller waits for the first one's files."""
        with self._lock(job_id):
            runner = self.runner
            with runner.db.session() as session:
                job = session.get(Job, job_id)
            if job is None or job.state != "succeeded" or not job.script_path:
                raise RollbackError(f"job {job_id} has no output")
            have: dict[str, str | None] = {"plan": job.plan_path, "changes": job.changes_path}
            missing = {what for what in wanted if not (have[what] and Path(have[what] or "").exists())}
            if missing:
                have.update(self._produce(job, missing))
            return [Path(have[what] or "") for what in ("plan", "changes") if what in wanted]

    def _produce(self, job: Job, missing: set[str]) -> dict[str, str | None]:
        runner = self.runner
        out_dir = Path(job.script_path or "").parent
        resolved, filters, options = runner.inputs(job)
        script = Path(job.script_path or "")
        # The change log alone needs nothing rendered: the engine's `changes` mode decodes and logs.
        # (Nothing will execute it, so there is no script to hold it to.)
        compare = "plan" in missing
        if not compare:
            options.mode = "changes"
            options.net = False  # the change log lists the range's changes as they happened, net or not
        out = engine.Artifacts(
            out_dir / RERUN_SCRIPT,
            out_dir / PLAN if "plan" in missing else None,
            out_dir / CHANGES if "changes" in missing else None,
        )
        log.info("job %s: producing %s on first need", job.id, " and ".join(sorted(missing)))
        try:
            output_process.run(resolved.rng, filters, options, out, runner.stopping)
            if compare and not same_statements(out.script, script):
                raise OutputsChanged(
                    f"job {job.id}: its binlog range no longer gives the script it gave, so its "
                    f"{' and '.join(sorted(missing))} cannot be produced; start the job again"
                )
        except BaseException:
            for path in (out.plan, out.changes):
                if path is not None:
                    path.unlink(missing_ok=True)
            raise
        finally:
            out.script.unlink(missing_ok=True)
            artifacts.index_path(out.script).unlink(missing_ok=True)
        made = {
            "plan": str(out.plan) if out.plan is not None else job.plan_path,
            "changes": str(out.changes) if out.changes is not None else job.changes_path,
        }
        runner.record(
            job.id,
            plan_path=made["plan"],
            changes_path=made["changes"],
            disk_bytes=retention.disk_usage(out_dir),
        )
        return made
