"""The service's `auto` engine: the cold threshold (MYSQL_ROLLBACK_AUTO_SPARK_BYTES) until its Spark
session is warm, the lower warm one (MYSQL_ROLLBACK_AUTO_SPARK_BYTES_WARM) from then on."""

from __future__ import annotations

from pathlib import Path

from app.models import Job
from rollback import EngineKind
from rollback.pipeline.engines import choose_engine
from tests.support.app import OPERATOR, auth

BINLOG = (
    Path(__file__).resolve().parents[2]
    / "corpus/rust-us__mysql-cdc-rs/tests/events/8.0/19_30_Table_map_event_Write_rows_log_event/binlog.000018"
)


def test_a_warm_service_takes_the_warm_threshold_and_a_cold_one_the_cli_threshold(make_client):
    client = make_client(engine="auto", auto_spark_bytes=1 << 40, auto_spark_bytes_warm=100)
    services = client.app.state.services
    services.runner.stop()  # nothing takes the queued job: its inputs are looked at, not run
    with open(BINLOG, "rb") as f:
        upload = client.post("/api/uploads", headers=auth(OPERATOR), files=[("files", ("binlog.000018", f))])
    body = {"upload": upload.json()["id"], "range": {"start_file": "binlog.000018", "start_position": 4}}
    job_id = client.post("/api/jobs", json=body, headers=auth(OPERATOR)).json()["id"]
    with services.db.session() as session:
        job = session.get(Job, job_id)
        assert job is not None
    size = BINLOG.stat().st_size - 4
    chosen = {}
    for warm in (False, True):
        services.runner.spark_ready = lambda warm=warm: warm
        options = services.runner.inputs(job)[2]
        chosen[warm] = choose_engine(EngineKind(options.engine), size, options.auto_spark_bytes)[0]
    assert chosen == {False: EngineKind.LOCAL, True: EngineKind.SPARK}
    assert services.spark.ready() is False  # the test's settings start no Spark
