"""mysql-rollback engine: decode binlogs, invert row changes, render and apply reverse SQL."""

__version__ = "0.1.0"

from rollback.binlog.constants import EventType as EventType
from rollback.binlog.reader import read_file_facts as read_file_facts
from rollback.binlog.reader import scan_headers as scan_headers
from rollback.execute import ExecutionCancelled as ExecutionCancelled
from rollback.execute import ExecutionObserver as ExecutionObserver
from rollback.execute import ExecutionProgress as ExecutionProgress
from rollback.flashback import GtidFilter as GtidFilter
from rollback.flashback import parse_datetime as parse_datetime
