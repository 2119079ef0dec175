"""The one SparkSession of this process: created lazily on first use, then kept warm.

Executors run the Python that `spark.pyspark.python` names (or PYSPARK_PYTHON): by default this
process's own interpreter, for every master, so local workers and cluster nodes that install the
package at the same path as the driver (a shared virtualenv, the same image) import it. A cluster
whose nodes keep it elsewhere names that interpreter with
MYSQL_ROLLBACK_SPARK_CONF_spark__pyspark__python. MYSQL_ROLLBACK_SPARK_CORES_MAX caps the cores the
session takes from a cluster (spark.cores.max): a long-running service then leaves cores for other
applications.

The JVM's standard error is a pipe that this process reads: of what it writes (log4j's lines, the
JVM's own warnings, Spark's notes on the log level at start) only log4j's ERROR and FATAL lines and
what follows them (their stack trace) reach this process's standard error, as it was when the JVM
started. MYSQL_ROLLBACK_SPARK_LOG_LEVEL lets everything through, from that level on.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
from typing import Any

_lock = threading.Lock()
_session: Any = None

DEFAULT_MASTER = "local[*]"
DEFAULT_SPARK_LOG_LEVEL = "ERROR"  # the JVM's own lines: MYSQL_ROLLBACK_SPARK_LOG_LEVEL
# A line of log4j2.properties' pattern ("%d{HH:mm:ss} %p %c{1}: %m"), and the levels that are kept.
_LOG_LINE = re.compile(rb"^\d\d:\d\d:\d\d ([A-Z]+) ")
_KEPT_LEVELS = (b"ERROR", b"FATAL")
# The driver JVM (in local mode the executors too) compiles with C1 only: its work per job is
# scheduling, not hot loops, and C2's compiler threads cost about 3.5 s of CPU at start-up (a cold
# session: 8.4 -> 4.8 s of JVM CPU) and go on compiling during the first warm jobs (bench/README.md,
# "A 5 GB range").
DRIVER_JIT = "-XX:TieredStopAtLevel=1"


def spark_master() -> str:
    return os.environ.get("MYSQL_ROLLBACK_SPARK_MASTER", DEFAULT_MASTER)


def is_local_master(master: str) -> bool:
    """Whether Spark runs in this process's JVM (local, local[N], local[*]): its workers share this disk."""
    return master == "local" or master.startswith("local[")


def session_started() -> bool:
    """Whether this process's SparkSession is up (warm): a job on it pays no JVM start."""
    return _session is not None


def spark_status(master: str | None = None) -> dict:
    """What /health reports: the installed Spark version and whether the session has started yet."""
    import pyspark

    started = _session is not None
    return {
        "version": pyspark.__version__,
        "master": master or spark_master(),
        "session": "started" if started else "not started (Spark starts lazily with the first job)",
    }


def get_spark(master: str | None = None) -> Any:
    """Return the process's SparkSession, starting it on first call on `master` (None: the
    MYSQL_ROLLBACK_SPARK_MASTER setting, else local[*]); later calls get that same session."""
    global _session
    with _lock:
        if _session is None:
            from pyspark import SparkConf, SparkContext
            from pyspark.java_gateway import launch_gateway
            from pyspark.sql import SparkSession

            master = master or spark_master()
            conf = {**python_sockets(master), **_spark_conf_from_env(master)}
            # PySpark sends its executors the interpreter PYSPARK_PYTHON names (spark.pyspark.python is
            # read only by spark-submit): this one's, unless configured, not `python3` on their PATH.
            python = conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
            os.environ["PYSPARK_PYTHON"] = conf["spark.pyspark.python"] = python
            spark_conf = SparkConf().setAppName("mysql-rollback").setMaster(master).setAll(list(conf.items()))
            level = os.environ.get("MYSQL_ROLLBACK_SPARK_LOG_LEVEL")
            writer = None if level else _filtered_stderr()
            try:
                gateway = launch_gateway(spark_conf, {} if writer is None else {"stderr": writer})
            finally:
                if writer is not None:
                    os.close(writer)  # the JVM holds its own copy: the reader sees the end when it exits
            SparkContext(conf=spark_conf, gateway=gateway)
            _session = SparkSession.builder.getOrCreate()
            _session.sparkContext.setLogLevel(level or DEFAULT_SPARK_LOG_LEVEL)
        return _session


def _filtered_stderr() -> int:
    """The write end of a pipe for the JVM's standard error; a thread passes its error lines on."""
    read, write = os.pipe()
    target = os.dup(2)  # standard error as it is now: the CLI points it at a log file while Spark starts
    threading.Thread(target=_pass_errors, args=(read, target), name="spark-jvm-stderr", daemon=True).start()
    return write


def _pass_errors(read: int, target: int) -> None:
    """Copy the ERROR and FATAL lines of log4j (and the lines after one, up to the next log line)."""
    keeping = False
    with os.fdopen(read, "rb") as lines, os.fdopen(target, "wb", buffering=0) as out:
        for line in lines:
            found = _LOG_LINE.match(line)
            if found is not None:
                keeping = found.group(1) in _KEPT_LEVELS
            if keeping:
                try:
                    out.write(line)
                except OSError:  # standard error gone: go on draining, or the JVM blocks on a full pipe
                    keeping = False


def spark_slots(master: str | None = None) -> int:
    """Tasks the session runs at once: the cores of its executors (sc.defaultParallelism), which
    starts the session."""
    return int(get_spark(master).sparkContext.defaultParallelism)


def network_conf(master: str, secret: str | None) -> dict[str, str]:
    """Where Spark listens, and who may talk to it.

    In local mode nothing outside this machine needs the driver: its RPC endpoint and block manager
    bind to loopback and the UI is off. With a cluster master the executors must reach the driver,
    so it listens where Spark decides, and `spark.authenticate` with the configured secret
    (MYSQL_ROLLBACK_SPARK_SECRET) keeps others out.
    """
    conf = {"spark.ui.enabled": "false"}
    if master.startswith("local"):
        conf.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"})
    elif secret:
        conf.update({"spark.authenticate": "true", "spark.authenticate.secret": secret})
    return conf


# A socket's path must fit sockaddr_un (108 bytes): the folder, "/." and a UUID with ".sock".
_SOCKET_NAME = 43
_SOCKET_PATH_MAX = 107


def python_sockets(master: str) -> dict[str, str]:
    """On a local master the JVM, its Python workers and this process's accumulator server talk over
    Unix domain sockets, in a folder of this process only (mode 0700, removed at exit).

    Over TCP every task waited about 40 ms for its last bytes (the small writes that end a task's
    input are held back until the worker acknowledges the previous ones, which it delays): 8 tasks
    that do nothing took 0.19-0.20 s, with these sockets 0.06 s, and a local[2] flashback job of the
    1M-row file 0.89 -> 0.74 s (bench/README.md). Spark skips the workers' authentication on these
    sockets: the folder's mode keeps other users out. A cluster master keeps Spark's default (TCP)."""
    if not is_local_master(master) or not hasattr(socket, "AF_UNIX"):
        return {}
    folder = tempfile.mkdtemp(prefix="mysql-rollback-spark-")
    if len(folder) + _SOCKET_NAME > _SOCKET_PATH_MAX:
        os.rmdir(folder)  # TMPDIR too deep for a socket's path: TCP, as Spark does by default
        return {}
    atexit.register(shutil.rmtree, folder, True)
    return {
        "spark.python.unix.domain.socket.enabled": "true",
        "spark.python.unix.domain.socket.dir": folder,
    }


def _spark_conf_from_env(master: str) -> dict[str, str]:
    """Any MYSQL_ROLLBACK_SPARK_CONF_<key with dots as __> passes through as a spark.* setting."""
    conf = {
        **network_conf(master, os.environ.get("MYSQL_ROLLBACK_SPARK_SECRET")),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
    }
    cores = os.environ.get("MYSQL_ROLLBACK_SPARK_CORES_MAX")
    if cores and not is_local_master(master):
        conf["spark.cores.max"] = cores
    log4j = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
    level = os.environ.get("MYSQL_ROLLBACK_SPARK_LOG_LEVEL", DEFAULT_SPARK_LOG_LEVEL)
    conf["spark.driver.extraJavaOptions"] = (
        f"-Dlog4j2.configurationFile=file:{log4j} -Dmysql_rollback.spark.level={level} {DRIVER_JIT}"
    )
    prefix = "MYSQL_ROLLBACK_SPARK_CONF_"
    for name, value in os.environ.items():
        if name.startswith(prefix):
            conf[name[len(prefix) :].replace("__", ".")] = value
    return conf
