"""The cyclic garbage collector paused while a step holds millions of small objects without cycles.

Such objects (a plan's steps, a fold's rows) are freed by reference counting; the collector would only
walk them again at every threshold they pass, which costs a big plan's apply or fold a large share of
its CPU. The collector is back, as it was, when the step ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(pause: bool = True) -> Iterator[None]:
    """The block with the cyclic garbage collector off (when `pause`); on again after if it was on."""
    enabled = pause and gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
