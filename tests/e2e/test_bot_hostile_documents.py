"""Hostile documents sent to the bot: a PDF bomb (pages all pointing at one FlateDecode
stream of 10 MB of text operators), its 200-page variant from six senders at once, an
encrypted PDF, text that is no text. Each sender is told why within 30 s, their message
keeps its label, another user chatting meanwhile is answered as fast as without them,
the reading's CPU stays within its limit, and SIGTERM during a read stops the bot
within its shutdown timeout, leaving no reader process behind."""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.texts import ENGLISH
from core.deps import Deps
from tests.support.bot_api_server import FakeBotAPI, FakeUser
from tests.support.bot_harness import round_trips, running_bot
from tests.support.bot_process import start_bot_process
from tests.support.hostile_files import encrypted_pdf, pdf_bomb

pytestmark = pytest.mark.timeout(120)

BORIS = FakeUser(202, "Boris", "en")
SENDERS = [FakeUser(301 + index, f"Sender {index}", "en") for index in range(7)]
CPU_S = 3.0


def p95(timings: list[float]) -> float:
    return statistics.quantiles(timings, n=20, method="inclusive")[-1]


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def test_pdf_bombs_are_refused_in_time_and_others_are_answered_meanwhile(
    make_deps: Callable[..., Deps],
) -> None:
    one_page, many_pages = pdf_bomb(1), pdf_bomb(200)
    async with running_bot(
        make_deps, [BORIS, *SENDERS], turn_wait_s=0.1, document_read_cpu_s=CPU_S
    ) as running:
        api = running.api
        await round_trips(running.api, BORIS, 3)  # warm: the first turns load models
        alone = await round_trips(running.api, BORIS, 12)

        cpu_before = children_cpu_s()
        sent_at = time.monotonic()
        api.send_document(SENDERS[0], one_page, file_name="bomb.pdf", mime_type="application/pdf")
        for sender in SENDERS[1:]:
            api.send_document(
                sender, many_pages, file_name="bomb200.pdf", mime_type="application/pdf"
            )
        beside = await round_trips(running.api, BORIS, 12)
        replies = await asyncio.gather(
            *(api.wait_for_sent(sender.id, 1, within_s=30) for sender in SENDERS)
        )
        waited = max(reply[0].at for reply in replies) - sent_at
        cpu = children_cpu_s() - cpu_before

        for sender, [reply] in zip(SENDERS, replies, strict=True):
            name = "bomb.pdf" if sender is SENDERS[0] else "bomb200.pdf"
            assert reply.result["text"] == ENGLISH.document_too_complex.format(name=name)
            [stored] = running.deps.store.messages.all_of(sender.id)
            assert stored["content"] == ENGLISH.document.format(name=name), "label kept"
        print(
            f"\nBoris p95 alone {p95(alone) * 1000:.0f} ms, beside 7 bombs "
            f"{p95(beside) * 1000:.0f} ms; last sender told in {waited:.1f} s; "
            f"readers' CPU {cpu:.1f} s (limit {CPU_S:g} s each)"
        )
        assert waited < 30
        assert cpu < CPU_S + 1 + len(SENDERS[1:]) * 1.5, "one bomb at its CPU limit, six refused"
        assert p95(beside) < max(2 * p95(alone), p95(alone) + 1.0)


async def test_encrypted_and_binary_documents_are_called_so(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(make_deps, [BORIS], turn_wait_s=0.1) as running:
        api = running.api
        api.send_document(BORIS, encrypted_pdf("secret plans"), file_name="locked.pdf",
                          mime_type="application/pdf")  # fmt: skip
        [locked] = await api.wait_for_sent(BORIS.id, 1)
        api.send_document(BORIS, os.urandom(4096), file_name="noise.txt", mime_type="text/plain")
        [_, noise] = await api.wait_for_sent(BORIS.id, 2)
    assert locked.result["text"] == ENGLISH.document_encrypted.format(name="locked.pdf")
    assert noise.result["text"] == ENGLISH.document_binary.format(name="noise.txt")


def reader_processes(parent: int) -> list[int]:
    """Processes `python -m app.reading` whose parent is `parent`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"app.reading" in command:
            found.append(int(entry.name))
    return found


async def test_sigterm_during_a_read_stops_the_bot_within_its_shutdown_timeout(
    tmp_path: Path,
) -> None:
    shutdown_s = 5.0
    async with FakeBotAPI() as api:
        bot = await start_bot_process(
            api,
            tmp_path / "data",
            tmp_path / "bot.log",
            allowed_user_ids=BORIS.id,
            turn_wait_s=0.1,
            shutdown_timeout_s=shutdown_s,
            document_read_cpu_s=60,
            document_read_timeout_s=60,
        )
        try:
            api.send_document(BORIS, pdf_bomb(1), file_name="bomb.pdf", mime_type="application/pdf")
            await api.wait_until(
                lambda: reader_processes(bot.process.pid), within_s=30, what="a reader at work"
            )
            readers = reader_processes(bot.process.pid)
            stopping = time.monotonic()
            assert await bot.stop(timeout_s=shutdown_s + 20) == 0
            stopped_in = time.monotonic() - stopping
            [told] = await api.wait_for_sent(BORIS.id, 1, within_s=1)
        finally:
            await bot.kill()
    print(f"\nSIGTERM during a read: stopped in {stopped_in:.1f} s (timeout {shutdown_s:g} s)")
    log = (tmp_path / "bot.log").read_text()
    assert "still running after" not in log, "the read is stopped at once, not waited for"
    assert stopped_in < shutdown_s + 5, "the turn ended before the timeout, then the exit"
    assert told.result["text"] == ENGLISH.document_too_complex.format(name="bomb.pdf")
    assert "Traceback" not in log
    await asyncio.sleep(0.5)
    for pid in readers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_download_past_the_cap_stops_whatever_the_server_declared(
    make_deps: Callable[..., Deps],
) -> None:
    async with running_bot(
        make_deps, [BORIS], turn_wait_s=0.1, max_file_bytes=1024 * 1024
    ) as running:
        running.api.send_document(
            BORIS, b"x" * (8 * 1024 * 1024), file_name="small.txt", mime_type="text/plain",
            declared_size=4096,
        )  # fmt: skip
        [reply] = await running.api.wait_for_sent(BORIS.id, 1)
    assert reply.result["text"] == ENGLISH.file_too_large.format(name="small.txt", limit_mb=1)
    assert running.turns == [], "nothing of it was read"
