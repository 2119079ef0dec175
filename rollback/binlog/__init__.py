"""The binary log's bytes, decoded: framing and CRC32 (`reader`), the small events (`events`,
`table_map`), row images (`rows`, `rowdecoder`: one compiled decoder per table-map signature), every
column type (`columns`), JSON and its partial diffs (`json_binary`), compressed transactions
(`payload`), GTID sets (`gtid`), and the walk over a stream with its transaction state (`decode`).
Pure functions over bytes: no file, server or schema source is opened here.

May import: `rollback.base`.
"""
