"""How many examples a property test tries: all of them in the whole suite (what CI runs), a third in
the fast lane (`./scripts/test --fast` sets ROLLBACK_TESTS_FAST_LANE=1), a quick loop for the one
editing the code. The same properties are checked either way; only the search is shorter."""

from __future__ import annotations

import os

FAST_LANE = os.environ.get("ROLLBACK_TESTS_FAST_LANE") == "1"
FAST_SHARE = 3  # the fast lane tries one example in this many
DEFAULT_EXAMPLES = 100  # hypothesis' own default, for tests that do not name a count


def examples(count: int) -> int:
    """`count` examples in the whole suite; a third of them, and at least ten, in the fast lane."""
    return max(10, count // FAST_SHARE) if FAST_LANE else count
