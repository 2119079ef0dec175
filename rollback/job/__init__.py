"""One job, from a request to its outputs: `run` (`Job`, `generate`: the one module that knows every
step and runs them in order), the refusals raised before the merge (`guard`: DDL in the range;
`ddl_modes`: `--ddl keep` and `--ddl reverse`; `schema_proof`: is the schema source still the table
the binlog wrote), the merge of the partitions' parts (`merge`; `net_script` for `--net`), the
script's header (`header`), what the job tells its caller (`report`) and what else the range holds
(`range_notes`).

May import: every package to its left in the data flow (`base`, `binlog`, `schema`, `request`,
`sources`, `render`, `pipeline`); never `target` or `cli`.
"""
