"""Where a range's bytes come from when they are on a server: the replication protocol (`server`),
GTID and time ranges resolved to files and positions (`ranges`, `resolve`), and the bytes spooled to
local files that can be split (`spool`). Local files and remote paths go through
`rollback.pipeline.storage`.

May import: `rollback.base`, `rollback.binlog`, `rollback.schema`, `rollback.request`.
"""
