"""What every step of the engine builds on: errors and exit codes (`errors`), the version, log lines
(`logs`), server DSNs and sessions (`dsn`), how an output reaches its path (`output_files`), which
hot path runs (`hotpath`: the compiled core `rollback/_speedups.pyx` or the pure-Python code), the
one escaper of comment text (`render_text`), the one quoting of names in statements (`identifiers`)
and the garbage collector paused while millions of acyclic objects are held (`collector`).

May import: nothing of the engine but one another (no cycle).
"""
