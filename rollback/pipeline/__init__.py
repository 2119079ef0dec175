"""A range cut into partitions and run on an engine: the storage the range is read from (`storage`),
the plan of partitions cut at event boundaries (`order`, `savepoints`, `plan`), one partition's run
from decode to its part files (`partition`, with `selection`, `dependencies`, `holdback`,
`plan_lines`, `spill`, `file_copy`, `parts`, `contents`, `changes`), and the engines that run
partitions in-process or as Spark tasks (`engines/`, `session`, `warm`, `staging`).

May import: `rollback.base`, `rollback.binlog`, `rollback.schema`, `rollback.request`,
`rollback.sources`, `rollback.render`; never `job`, `target` or `cli`.
"""
