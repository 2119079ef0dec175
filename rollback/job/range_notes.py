"""What a flashback's range holds besides the incident, said before anyone applies it: a range that runs
to the end of the log (every change after the incident is undone too), or transactions of several
connections (thread ids). The safe habit is a bounded window and a look at its transactions first; these
notes say what else is in the range and how to narrow it. They warn, they never refuse: a range that
is already bounded to one connection gets none, nor does an open range whose transactions are
picked by GTID or position, and no exit code changes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rollback.pipeline.parts import Summary
from rollback.request.spec import Filters, RangeSpec

THREADS_NAMED = 5  # thread ids named in the note, the busiest first


def range_notes(rng: RangeSpec, filters: Filters, summaries: Iterable[Summary]) -> list[str]:
    notes = []
    named_transactions = bool(filters.include_gtid or filters.include_positions)  # nothing else is in
    if rng.open_ended and not named_transactions:
        notes.append(
            "the range runs to the end of the log (no stop position, stop time or GTIDs): the changes "
            "made after the incident are in it and are undone too; bound it with a stop position, stop "
            "time or GTIDs, after a look at its transactions (--changes FILE, or decode --format text)"
        )
    threads: Counter[int | None] = Counter()
    for summary in summaries:
        threads.update(summary.threads)
    named = [(tid, n) for tid, n in threads.most_common() if tid is not None]
    if filters.thread_id is None and len(named) > 1:
        listed = ", ".join(f"{tid} ({n} transaction(s))" for tid, n in named[:THREADS_NAMED])
        more = f" and {len(named) - THREADS_NAMED} more" if len(named) > THREADS_NAMED else ""
        notes.append(
            f"the range holds transactions of {len(named)} connections, thread ids {listed}{more}: if the "
            "incident is one connection's, keep only it (--thread-id, or --exclude-thread-id for the others)"
        )
    return notes
