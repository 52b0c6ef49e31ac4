"""Benchmark: kill -9 at random moments of bot turns, then count what was lost.

`pytest -m benchmark tests/e2e/test_bot_soak.py -s` prints the table
docs/reliability.md quotes. SOAK_KILLS and SOAK_SEED change the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.bot_soak import soak_bot_turns

pytestmark = [pytest.mark.benchmark, pytest.mark.timeout(3600)]


async def test_kill_9_during_bot_turns_loses_nothing(tmp_path: Path):
    kills = int(os.environ.get("SOAK_KILLS", "20"))
    seed = int(os.environ.get("SOAK_SEED", "13"))
    report = await soak_bot_turns(tmp_path, kills=kills, seed=seed)
    print(f"\nseed {seed}\n{report.table()}")
    assert report.lost == 0
    assert report.stored == report.sent
    assert report.answered_in_store == report.sent
    assert report.answered_twice == 0
