"""The `mysql-rollback` command line: `commands` (the parser, the subcommands, `main`) and its option
families: `connection` (-h/-P/-u/-p and option files for every server), `option_files` (my.cnf and
.mylogin.cnf), `habits` (binlog2sql and mysqlbinlog spellings), `fetch`, `verify`, `report`
(`--report`/`--junit`), `progress` (the terminal's progress display), `summary` (`--execute`'s
result) and `service` (`verify --job`, a client of the service).

May import: the door (`rollback`) and, for the commands that need them, `rollback.base`,
`rollback.sources` and `rollback.target`.
"""
