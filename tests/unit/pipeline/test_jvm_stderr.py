"""What of the Spark JVM's standard error reaches ours (rollback/pipeline/session.py): log4j's ERROR
and FATAL lines and the lines that follow one (its stack trace), nothing else."""

from __future__ import annotations

import os

from rollback.pipeline.session import _pass_errors

JVM_STDERR = b"""WARNING: Using incubator modules: jdk.incubator.vector
Setting default log level to "WARN".
06:07:04 WARN Utils: Your hostname, vm, resolves to a loopback address
06:07:06 WARN NativeCodeLoader: Unable to load native-hadoop library for your platform
06:08:01 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:581)
06:08:01 INFO TaskSetManager: Lost task 0.0 in stage 0.0
06:08:02 FATAL SparkContext: out of memory
"""


def test_only_error_lines_and_their_traces_pass():
    jvm_read, jvm_write = os.pipe()
    out_read, out_write = os.pipe()
    os.write(jvm_write, JVM_STDERR)
    os.close(jvm_write)
    _pass_errors(jvm_read, out_write)  # returns when the JVM's end is closed; closes both of its ends
    with os.fdopen(out_read, "rb") as passed:
        assert passed.read().decode().splitlines() == [
            "06:08:01 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)",
            "org.apache.spark.api.python.PythonException: Traceback (most recent call last):",
            "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:581)",
            "06:08:02 FATAL SparkContext: out of memory",
        ]
