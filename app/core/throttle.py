"""Throttling of failed authentication per client address (a moving window, from `limits`).

Only failures count. An address over its limit gets 429 for every authenticated request until the
window lets it through again, a right token included: otherwise a guesser would still learn which
guess was right.
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter


class AuthThrottle:
    def __init__(self, failures_per_minute: int):
        self._item = RateLimitItemPerMinute(failures_per_minute) if failures_per_minute else None
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again, or None when it is not throttled."""
        if self._item is None or self._limiter.test(self._item, address):
            return None
        reset = self._limiter.get_window_stats(self._item, address).reset_time
        return max(1, math.ceil(reset - time.time()))

    def failed(self, address: str) -> None:
        if self._item is not None:
            self._limiter.hit(self._item, address)
