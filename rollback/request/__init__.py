"""What a caller asks for, checked once at the door: the range (`spec.RangeSpec`), the filters
(`spec.Filters`), the options (`spec.Options`) and their rules, and the `--where` predicate parsed and
evaluated on decoded row images with MySQL's comparison and NULL rules (`predicate`).

May import: `rollback.base`, `rollback.binlog`, `rollback.schema`.
"""
