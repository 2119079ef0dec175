"""Jobs: creation, the bounded worker pool that runs them through the engine, cancellation, recovery.

A job is queued in the database first; one of `workers` threads takes it and runs it in a process
of its own (job_process.py), which resolves its source and runs the engine, and records the
progress that process sends. At start-up, jobs left `running` by a previous
process are marked failed with the reason, and queued jobs are queued again.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from app.core.config import ServerConfig, Settings
from app.db import Database
from app.metrics import Metrics
from app.models import FINAL_STATES, Job, Upload, utcnow
from app.schemas import JobCreate, filters_from
from app.services import answers, engine, picks, retention, sources
from app.services.pool import WorkerPool
from app.services.storage import storage_problem
from rollback import (
    EXIT_INCOMPLETE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    Filters,
    Options,
    RollbackError,
    interrupt_thread,
)

log = logging.getLogger("mysql_rollback.jobs")

RESTART_REASON = (
    "the service restarted while this job was running; its partial output was discarded; start the job again"
)
STOP_REASON = "the service stopped while this job was running; start the job again"

# A job's files in its directory: the script always, the others when asked for or first needed.
SCRIPT = "rollback.render.sql"
PLAN = "plan.jsonl"
CHANGES = "changes.jsonl"


class Scrubber:
    """Replaces every configured password in a text (error messages, log lines) by ***."""

    def __init__(self, servers: dict[str, ServerConfig]):
        self._secrets = sorted({s.password for s in servers.values() if s.password}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


def new_id() -> str:
    return uuid.uuid4().hex


def create_job(db: Database, req: JobCreate, who: str) -> Job:
    job = Job(
        id=new_id(),
        created_by=who,
        created_at=utcnow(),
        state="queued",
        mode=req.mode,
        source="server" if req.server else "upload",
        server=req.server,
        upload_id=req.upload,
        range_requested=req.range.model_dump(exclude_none=True),
        filters=req.filters.model_dump(exclude_none=True),
        options=req.options.model_dump(exclude_none=True),
        progress_bytes=0,
        progress_total=0,
        progress_events=0,
        progress_events_total=0,
        rows_emitted=0,
        transactions=0,
        statements=0,
        script_bytes=0,
        cancel_requested=False,
    )
    with db.session() as session:
        session.add(job)
        session.commit()
    return job


class JobRunner(WorkerPool[str]):
    kind = "job"

    def __init__(
        self,
        db: Database,
        settings: Settings,
        servers: dict[str, ServerConfig],
        metrics: Metrics,
        scrub: Scrubber,
    ):
        super().__init__(settings.workers, scrub)
        self.db = db
        self.settings = settings
        self.servers = servers
        self.metrics = metrics
        self._cancel: dict[str, threading.Event] = {}
        self._job_threads: dict[str, int] = {}  # running job -> the worker thread that runs it
        self._lock = threading.Lock()
        # Whether the service's Spark session is warm (app/services/spark_warm.py sets it): `auto`
        # then moves to Spark at settings.auto_spark_bytes_warm instead of auto_spark_bytes.
        self.spark_ready: Callable[[], bool] = lambda: False
        # In a job's process (app/services/job_process.py): the service's Spark session, lent.
        self.spark: Any = None
        # How `run` runs the job's Python side in a process of its own: job_process.run, which builds
        # on this class (so this module does not import it); start_services sets it.
        self.in_process: Callable[[JobRunner, str, Path, threading.Event], dict[str, Any]] | None = None

    # ---- life cycle

    def recover(self) -> None:
        with self.db.session() as session:
            stale = session.scalars(select(Job).where(Job.state == "running")).all()
            for job in stale:
                job.state = "failed"
                job.error = RESTART_REASON
                job.exit_code = EXIT_INTERRUPTED
                job.finished_at = utcnow()
                shutil.rmtree(self.job_dir(job.id), ignore_errors=True)
            session.commit()
            if stale:
                log.warning("marked %d job(s) left running by the previous process as failed", len(stale))
            queued = session.scalars(
                select(Job.id).where(Job.state == "queued").order_by(Job.created_at)
            ).all()
        for job_id in queued:
            self.submit(job_id)

    def job_dir(self, job_id: str) -> Path:
        return self.settings.jobs_dir / job_id

    # ---- cancellation

    def cancel(self, job_id: str) -> tuple[Job | None, bool]:
        """Cancel a queued job at once, a running one at its next rows event or commit.

        Returns the job and whether this call changed it (False: unknown or already finished)."""
        with self._lock, self.db.session() as session:
            job = session.get(Job, job_id)
            if job is None or job.state in FINAL_STATES:
                return job, False
            job.cancel_requested = True
            if job.state == "queued":
                job.state = "cancelled"
                job.finished_at = utcnow()
                job.error = "cancelled before it started"
                job.exit_code = EXIT_INTERRUPTED
            else:
                self._cancel.setdefault(job_id, threading.Event()).set()
                thread = self._job_threads.get(job_id)
                if thread is not None:
                    # A job waiting on a silent server would see the event only when the read
                    # timeout ends that wait: its sessions are cut now.
                    interrupt_thread(thread)
            session.commit()
            return job, True

    # ---- the work

    def _claim(self, job_id: str) -> Job | None:
        with self._lock, self.db.session() as session:
            job = session.get(Job, job_id)
            if job is None or job.state != "queued":
                return None
            job.state = "running"
            job.started_at = utcnow()
            session.commit()
            self._cancel[job_id] = threading.Event()
            self._job_threads[job_id] = threading.get_ident()
            return job

    def record(self, job_id: str, **values: Any) -> None:
        """Write these columns of the job."""
        self._set(job_id, **values)

    def _set(self, job_id: str, **values: Any) -> None:
        with self.db.session() as session:
            answers.only_job(session, job_id)  # the other jobs' cached answers stay (app/services/answers.py)
            session.execute(update(Job).where(Job.id == job_id).values(**values))
            session.commit()

    def run(self, job_id: str) -> None:
        job = self._claim(job_id)
        if job is None:
            return
        cancel = self._cancel[job_id]
        started = time.monotonic()
        log.info("job %s: started (%s %s)", job_id, job.source, job.server or job.upload_id)
        out_dir = self.job_dir(job_id)
        outcome = "failed"
        values: dict[str, Any] = {}
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            assert self.in_process is not None
            values = self.in_process(self, job_id, out_dir, cancel)
            self.metrics.bytes_decoded.inc(values["progress_bytes"])
            self.metrics.rows_emitted.inc(values["rows_emitted"])
            outcome = "succeeded"
            # As the CLI exits: 3 when --allow-partial left irreversible changes out of the script.
            values["exit_code"] = EXIT_INCOMPLETE if values.get("irreversible") else 0
        except engine.Cancelled:
            outcome = "failed" if self.stopping.is_set() else "cancelled"
            values = {
                "error": STOP_REASON if self.stopping.is_set() else "cancelled while running",
                "exit_code": EXIT_INTERRUPTED,
            }
        except RollbackError as exc:
            values = {"error": self.scrub(exc.one_line()), "exit_code": exc.exit_code}
        except OSError as exc:
            problem = storage_problem(exc, "the job's output")
            values = {
                "error": self.scrub(f"{problem}; the partial output was removed; start the job again"),
                "exit_code": EXIT_REFUSED,
            }
        except Exception as exc:  # noqa: BLE001 - recorded on the job, never a traceback to the user
            log.error("job %s: internal error:\n%s", job_id, self.scrub(traceback.format_exc()))
            values = {
                "error": self.scrub(f"internal error ({type(exc).__name__}): {' '.join(str(exc).split())}"),
                "exit_code": EXIT_INTERNAL,
            }
        finally:
            with self._lock:
                self._cancel.pop(job_id, None)
                self._job_threads.pop(job_id, None)
        if outcome == "failed" and cancel.is_set() and not self.stopping.is_set():
            # what failed is a server session that cancel() cut
            outcome = "cancelled"
            values = {"error": "cancelled while running", "exit_code": EXIT_INTERRUPTED}
        if outcome != "succeeded":
            shutil.rmtree(out_dir, ignore_errors=True)
        self._set(job_id, state=outcome, finished_at=utcnow(), **values)
        elapsed = time.monotonic() - started
        self.metrics.job_duration.labels(outcome).observe(elapsed)
        log.info("job %s: %s after %.2fs", job_id, outcome, elapsed)

    def _source(self, job: Job) -> sources.Resolved:
        requested = dict(job.range_requested)
        if job.source == "upload":
            with self.db.session() as session:
                upload = session.get(Upload, job.upload_id)
                if upload is None:
                    raise RollbackError(f"upload {job.upload_id} no longer exists")
                names = [f["name"] for f in upload.files]
            resolved = sources.resolve_upload(self.settings.uploads_dir / upload.id, names, requested)
            schema_server = (job.options or {}).get("schema_server")
            if schema_server:
                resolved.schema = sources.server_schema(self._server(schema_server))
            return resolved
        return sources.resolve_server(self._server(job.server or ""), requested, self.settings)

    def _server(self, name: str) -> ServerConfig:
        server = self.servers.get(name)
        if server is None:
            raise RollbackError(f"server {name!r} is no longer configured")
        return server

    def inputs(self, job: Job) -> tuple[sources.Resolved, Filters, Options]:
        """What the engine runs for this job: its source resolved, its filters and options."""
        resolved = self._source(job)
        filters = filters_from(job.filters or {})
        o = job.options or {}
        options = Options(
            mode=job.mode,
            full_where=bool(o.get("full_where")),
            allow_partial=bool(o.get("allow_partial")),
            allow_partial_transactions=bool(o.get("allow_partial_transactions")),
            allow_empty=bool(o.get("allow_empty")),
            trust_schema=bool(o.get("trust_schema")),
            accept_lost_rows=bool(o.get("accept_lost_rows")),
            net=bool(o.get("net")),
            ddl=str(o.get("ddl") or "refuse"),
            schema=resolved.schema,
            engine=self.settings.engine,
            spark_master=self.settings.spark_master,
            auto_spark_bytes=(
                self.settings.auto_spark_bytes_warm if self.spark_ready() else self.settings.auto_spark_bytes
            ),
            spark_warm=self.spark_ready(),
            partition_bytes=self.settings.partition_bytes,
            work_dir=self.settings.work_dir,
        )
        return resolved, filters, options

    def _execute(self, job: Job, out_dir: Path, cancelled: Callable[[], bool]) -> dict[str, Any]:
        resolved, filters, options = self.inputs(job)
        if cancelled():
            raise engine.Cancelled()
        total = sum(max(0, b - a) for a, b in engine.range_sizes(resolved.rng))
        self._set(job.id, range_resolved=resolved.describe(), progress_total=total)
        # The script is the product; the plan and the change log only when the job asks for them
        # (otherwise app/services/outputs.py produces them when first needed).
        wanted = set((job.options or {}).get("outputs") or ())
        out = engine.Artifacts(
            out_dir / SCRIPT,
            out_dir / PLAN if "plan" in wanted else None,
            out_dir / CHANGES if "changes" in wanted else None,
        )

        def progress(p: engine.Progress) -> None:
            self._set(
                job.id,
                progress_bytes=p.bytes_done,
                progress_total=p.bytes_total or total,
                progress_events=p.events,
                progress_events_total=p.events_total,
            )

        report, done = engine.run(
            resolved.rng,
            filters,
            options,
            out,
            progress,
            lambda: cancelled() or self.stopping.is_set(),
            self.spark,
        )
        # The line indexes of the script and change log are built by the first page that reads
        # them (artifacts.iter_lines): a job that nobody pages through never pays for them.
        summary = report.to_dict()
        rows = sum(item["rows"] for item in summary["counts"])
        summary["transactions_list"] = picks.script_transactions(out.script)
        summary["bytes"] = done.bytes_total
        return {
            "progress_bytes": done.bytes_total,
            "progress_total": done.bytes_total,
            "progress_events": done.events,
            "progress_events_total": done.events_total,
            "rows_emitted": rows,
            "transactions": report.transactions,
            "statements": report.statements,
            "counts": summary["counts"],
            "warnings": [
                self.scrub(w)
                for w in resolved.warnings
                + list(report.warnings)
                + [f"DDL in the range at {d['file']}:{d['pos']}: {d['sql']}" for d in report.ddl]
            ],
            "irreversible": report.irreversible,
            "summary": {
                k: summary.get(k)
                for k in (
                    "largest_transactions",
                    "ddl",
                    "server_version",
                    "row_images",
                    "schema_check",
                    "ddl_mode",
                    "schema_timelines",
                    "bytes",
                    "irreversible_count",
                    "engine",
                    "engine_reason",
                    "partitions",
                    "events_total",
                    "side_effects",
                    "largest_statement",
                    "no_fk_checks",
                    "transactions_list",
                    "dependencies",
                    "dependency_count",
                    "partial_transactions",
                    "lost_rows",
                )
            },
            "script_path": str(out.script),
            "plan_path": str(out.plan) if out.plan else None,
            "changes_path": str(out.changes) if out.changes else None,
            "script_bytes": out.script.stat().st_size,
            "disk_bytes": retention.disk_usage(out_dir),
        }
