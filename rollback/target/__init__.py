"""The target server: a plan applied with every statement checked (`execute`, in batches built by
`batches`; over several connections through XA: `parallel`; column by column for `--merge`:
`merge_columns`, its rows read from the plan file when needed: `merge_plan`, settled by a resolutions
document: `resolutions`), tables' checksums (`checksum`),
a target verified after execution (`verify`) and rows read by key for the conflict view (`rows`).

May import: `rollback.base`, `rollback.schema`, `rollback.sources`; never `job` or `cli`.
"""
