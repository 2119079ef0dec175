"""What start-up made is frozen while the service runs: the collector's full passes, which walk every
tracked object and took 100-300 ms each on the event loop under polling, no longer walk it."""

from __future__ import annotations

import gc


def test_start_up_objects_are_frozen_while_the_service_runs(make_client, tmp_path):
    before = gc.get_freeze_count()
    make_client(data_dir=tmp_path / "data", workers=1)
    assert gc.get_freeze_count() > max(before, 10_000)
