"""The hostile-documents bench at a tiny size: every phase runs against the bot and every
figure is measured."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.hostile_documents import Size, measure, report
from core.deps import Deps

pytestmark = [pytest.mark.timeout(120), pytest.mark.stores("sqlite")]


async def test_a_tiny_run_measures_every_figure(make_deps: Callable[..., Deps]) -> None:
    size = Size(pages=3, senders=2, turns=2, stream_bytes=64 * 1024, cpu_s=2.0)
    figures = await measure(make_deps, size)
    assert len(figures.alone) == len(figures.beside_bombs) == len(figures.beside_senders) == 2
    assert all(t > 0 for t in [*figures.alone, *figures.beside_bombs, *figures.beside_senders])
    assert 0 < figures.bomb_reply_s < 60 and 0 < figures.variant_reply_s < 60
    assert 0 < figures.seventh_stored_s <= figures.senders_reply_s + 60
    assert figures.readers_cpu_s > 0, "the PDFs were read by worker processes"
    table = report(figures, size)
    assert "| 2 senders of the variant at once: last reply |" in table
    assert table.count("\n") == 7
