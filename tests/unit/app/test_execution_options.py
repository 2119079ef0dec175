"""An execution of a job whose incident ran with foreign_key_checks=0 runs so too (issue 25, class 9):
the job's summary says so, the execution's record keeps it (a recovered or re-read execution runs
as the first would), and the engine gets it."""

from __future__ import annotations

from types import SimpleNamespace

from app.services.executions import ExecutionOptions
from tests.support.app import job_row


def _record(options: ExecutionOptions) -> SimpleNamespace:
    return SimpleNamespace(
        accepted=options.accepted(),
        details={
            "per_transaction": options.per_transaction,
            "lock_wait_timeout": options.lock_wait_timeout,
            "foreign_key_checks": options.foreign_key_checks,
        },
    )


def test_the_setting_goes_from_the_record_to_the_engine():
    off = ExecutionOptions(foreign_key_checks=False)
    assert ExecutionOptions.of(_record(off)).engine_arguments()["foreign_key_checks"] is False
    assert ExecutionOptions.of(_record(ExecutionOptions())).engine_arguments()["foreign_key_checks"] is True


def test_a_record_written_before_the_setting_existed_keeps_the_checks_on():
    old = SimpleNamespace(accepted={}, details={"per_transaction": False, "lock_wait_timeout": 10})
    assert ExecutionOptions.of(old).foreign_key_checks is True


def test_a_new_execution_takes_the_jobs_summary(tmp_path):
    from app.db import Database, upgrade
    from app.services.executions import new_execution

    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    upgrade(url)
    db = Database(url)
    job = job_row(summary={"no_fk_checks": {"file": "mysql-bin.000001", "pos": 4, "table": "a.b"}})
    with db.session() as session:
        session.add(job)
        session.commit()
        session.refresh(job)
        session.expunge(job)
    target = SimpleNamespace(name="t")
    record = new_execution(db, job, target, True, "abort", "me", ExecutionOptions())  # type: ignore[arg-type]
    assert record.details["foreign_key_checks"] is False
    job.summary = {}
    record = new_execution(db, job, target, True, "abort", "me", ExecutionOptions())  # type: ignore[arg-type]
    assert record.details["foreign_key_checks"] is True
