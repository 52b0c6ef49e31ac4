"""Hostile documents against a running bot: figures, no verdicts.

The bot runs in this process against the fake Bot API (no chat models: answers come from
memory), over a temporary data directory. Measured, in this order:

1. another user's round trips alone (the baseline);
2. a one-page PDF bomb and a many-page variant sent by two users: seconds to each
   sender's reply, and the other user's round trips meanwhile;
3. several senders of the many-page variant at once: seconds to their last reply, and a
   further user's round trips meanwhile (and how soon that user's message was stored).

Run: `python -m bench.hostile_documents [--pages 200] [--senders 6] [--turns 12]`.
The PDFs are `tests.support.hostile_files.pdf_bomb`, as the end-to-end tests send them.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from core.deps import Deps
from stores.embedders import build_embedder
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_harness import round_trips, running_bot
from tests.support.hostile_files import pdf_bomb
from tests.support.services import closing_each, isolated_settings, local_deps

OTHER = FakeUser(202, "Boris", "en")
SEVENTH = FakeUser(203, "Vera", "en")
BOMBER, VARIANT = FakeUser(301, "Bomb", "en"), FakeUser(302, "Variant", "en")
PDF = "application/pdf"


@dataclass(frozen=True)
class Size:
    """How big a run is."""

    pages: int = 200
    """Pages of the many-page variant."""
    senders: int = 6
    """Senders of the variant at once in the last phase."""
    turns: int = 12
    """Round trips of the other user per phase."""
    stream_bytes: int = 10 * 1024 * 1024
    """The content stream all pages of a bomb share, decompressed."""
    cpu_s: float = 3.0
    """Each reader's CPU-time limit (`TOPICA_DOCUMENT_READ_CPU_S`)."""


@dataclass
class Figures:
    """What one run measured, in seconds."""

    alone: list[float] = field(default_factory=list)
    beside_bombs: list[float] = field(default_factory=list)
    bomb_reply_s: float = 0.0
    variant_reply_s: float = 0.0
    beside_senders: list[float] = field(default_factory=list)
    senders_reply_s: float = 0.0
    seventh_stored_s: float = 0.0
    readers_cpu_s: float = 0.0


def senders_of(size: Size) -> list[FakeUser]:
    return [FakeUser(401 + index, f"Sender {index}", "en") for index in range(size.senders)]


def p95(timings: list[float]) -> float:
    if len(timings) < 2:
        return max(timings, default=0.0)
    return statistics.quantiles(timings, n=20, method="inclusive")[-1]


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def replied_in(api: FakeBotAPI, user: FakeUser, since: float) -> float:
    """Seconds from `since` to the first reply to `user`."""
    [reply] = await api.wait_for_sent(user.id, 1, within_s=120)
    return reply.at - since


async def bombs_phase(api: FakeBotAPI, size: Size, figures: Figures) -> None:
    bomber, variant = BOMBER, VARIANT
    sent = time.monotonic()
    api.send_document(bomber, pdf_bomb(1, size.stream_bytes), file_name="bomb.pdf", mime_type=PDF)
    api.send_document(
        variant, pdf_bomb(size.pages, size.stream_bytes), file_name="many.pdf", mime_type=PDF
    )
    figures.beside_bombs = await round_trips(api, OTHER, size.turns)
    figures.bomb_reply_s = await replied_in(api, bomber, sent)
    figures.variant_reply_s = await replied_in(api, variant, sent)


async def senders_phase(api: FakeBotAPI, deps: Deps, size: Size, figures: Figures) -> None:
    senders = senders_of(size)
    many = pdf_bomb(size.pages, size.stream_bytes)
    sent = time.monotonic()
    for sender in senders:
        api.send_document(sender, many, file_name="many.pdf", mime_type=PDF)
    api.send_text(SEVENTH, "Hello, I am here too.")
    await api.wait_until(lambda: deps.store.messages.count(SEVENTH.id) > 0, within_s=120)
    figures.seventh_stored_s = time.monotonic() - sent
    await api.wait_for_sent(SEVENTH.id, 1, within_s=120)
    figures.beside_senders = await round_trips(api, SEVENTH, size.turns)
    replies = await asyncio.gather(
        *(api.wait_for_sent(sender.id, 1, within_s=120) for sender in senders)
    )
    figures.senders_reply_s = max(reply[0].at for reply in replies) - sent


async def measure(make_deps: Callable[..., Deps], size: Size) -> Figures:
    """One run over services from `make_deps` (as `tests.support.bot_harness` takes it)."""
    figures = Figures()
    users = [OTHER, SEVENTH, BOMBER, VARIANT, *senders_of(size)]
    async with running_bot(
        make_deps, users, turn_wait_s=0.1, document_read_cpu_s=size.cpu_s
    ) as running:
        await round_trips(running.api, OTHER, 3)  # the first turns load models
        figures.alone = await round_trips(running.api, OTHER, size.turns)
        cpu_before = children_cpu_s()
        await bombs_phase(running.api, size, figures)
        await senders_phase(running.api, running.deps, size, figures)
        figures.readers_cpu_s = children_cpu_s() - cpu_before
    return figures


def report(figures: Figures, size: Size) -> str:
    def ms(seconds: float) -> str:
        return f"{seconds * 1000:.0f} ms"

    return "\n".join(
        [
            f"| what ({size.pages}-page variant, reader CPU limit {size.cpu_s:g} s) | figure |",
            "|---|---|",
            f"| one-page bomb: sender's reply | {figures.bomb_reply_s:.1f} s |",
            f"| {size.pages}-page variant: sender's reply | {figures.variant_reply_s:.1f} s |",
            f"| another user's round trip p95: alone / beside the two | "
            f"{ms(p95(figures.alone))} / {ms(p95(figures.beside_bombs))} |",
            f"| {size.senders} senders of the variant at once: last reply | "
            f"{figures.senders_reply_s:.1f} s |",
            f"| a further user meanwhile: stored after / round trip p95 | "
            f"{ms(figures.seventh_stored_s)} / {ms(p95(figures.beside_senders))} |",
            f"| readers' CPU, all phases | {figures.readers_cpu_s:.1f} s |",
        ]
    )


def run_locally(size: Size) -> Figures:
    """`measure` over fresh data directories in a temporary folder, closed after."""
    with tempfile.TemporaryDirectory(prefix="topica-hostile-") as folder:
        root = Path(folder)
        embedder = build_embedder(isolated_settings(root / "unused"))
        numbers = count(1)

        def build(models: dict[str, Any] | None = None, **overrides: Any) -> Deps:
            return local_deps(root / f"data{next(numbers)}", embedder, models, **overrides)

        with closing_each(build) as make:
            return asyncio.run(measure(make, size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=Size.pages)
    parser.add_argument("--senders", type=int, default=Size.senders)
    parser.add_argument("--turns", type=int, default=Size.turns)
    parser.add_argument("--cpu-s", type=float, default=Size.cpu_s)
    options = parser.parse_args()
    size = Size(options.pages, options.senders, options.turns, cpu_s=options.cpu_s)
    print(report(run_locally(size), size))


if __name__ == "__main__":
    main()
