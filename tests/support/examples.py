"""How many examples a property test tries: as many as the test asks for in `make test`
(and CI), a tenth of them (at least 25) in the quick unit loop, `make test-fast`, which
sets `TEST_QUICK=1`. Hypothesis keeps the failing examples it found in its database, so
a quick run still replays them first."""

from __future__ import annotations

import os

QUICK = os.environ.get("TEST_QUICK") == "1"


def examples(count: int) -> int:
    """`count` for a full run; a tenth of it, at least 25, for a quick one."""
    return max(25, count // 10) if QUICK else count
