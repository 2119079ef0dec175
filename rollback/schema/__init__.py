"""Table definitions and how they change: column names, keys and charsets from the binlog, a server
or a DDL file (`tables`, `charsets`), which tables a DDL statement changes (`ddl`), DDL parsed into
small operations (`operations`), each table's definition at every position of a range rebuilt from
an anchor (`history`), and what a reverse statement sets off on a server beyond its rows: triggers,
cascades, non-transactional engines (`side_effects`).

May import: `rollback.base`, `rollback.binlog`.
"""
