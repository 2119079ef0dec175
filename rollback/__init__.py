"""mysql-rollback engine: decode binlogs, invert row changes, render and apply reverse SQL."""

__version__ = "0.1.0"

from rollback.execute import ExecutionCancelled as ExecutionCancelled
from rollback.execute import ExecutionObserver as ExecutionObserver
from rollback.execute import ExecutionProgress as ExecutionProgress
