"""Decoded row changes turned into text: JSON records (`records`, and `decode_files` for
`mysql-rollback decode`), the change log's lines (`change_lines`), a change inverted (`invert`) and
rendered as exact SQL with its conflict check (`sql`), one rows event's statements joined into
multi-row statements (`statement_batches`), and each row's net change over a range (`net`).

May import: `rollback.base`, `rollback.binlog`, `rollback.schema`, `rollback.request`.
"""
