"""mysql-rollback engine: decode binlogs, invert row changes, render and apply reverse SQL."""

__version__ = "0.1.0"
