"""Reading documents within bounds (`app.reading`): PDFs in a worker process refused
past their page, byte, CPU and wall-clock bounds, killed on cancel; text decoded by its
detected encoding or refused as binary."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from app.reading import DocumentUnreadable, ReadLimits, decode_text, read_document
from tests.support.hostile_files import encrypted_pdf, pdf_bomb, small_pdf

pytestmark = pytest.mark.timeout(60)


async def test_a_pdf_is_read_in_a_worker() -> None:
    text = await read_document(small_pdf("Quarterly report: revenue grew"), "pdf")
    assert text == "Quarterly report: revenue grew"


@pytest.mark.parametrize(
    ("data", "limits", "detail"),
    [
        (pdf_bomb(200), ReadLimits(), "decompressed bytes"),
        (pdf_bomb(5, stream_bytes=1000), ReadLimits(max_pages=4), "5 pages"),
        (pdf_bomb(1), ReadLimits(cpu_s=1), "CPU-time"),
        (pdf_bomb(1), ReadLimits(cpu_s=60, timeout_s=1.5), "not read within"),
    ],
)
async def test_a_pdf_past_a_bound_is_too_complex(data, limits, detail) -> None:
    started = time.monotonic()
    with pytest.raises(DocumentUnreadable) as raised:
        await read_document(data, "pdf", limits)
    assert raised.value.reason == "too_complex"
    assert detail in raised.value.detail
    assert time.monotonic() - started < min(limits.timeout_s, limits.cpu_s) + 5


async def test_encrypted_and_broken_pdfs_are_called_so() -> None:
    with pytest.raises(DocumentUnreadable) as encrypted:
        await read_document(encrypted_pdf("secret"), "pdf")
    assert encrypted.value.reason == "encrypted"
    with pytest.raises(DocumentUnreadable) as broken:
        await read_document(b"%PDF-1.4\nnonsense", "pdf")
    assert broken.value.reason == "unreadable"


def readers() -> set[int]:
    """This process's live document readers (another test worker's are not its own)."""
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as command:
                    reads = b"app.reading" in command.read()
                with open(f"/proc/{name}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if reads and parent == os.getpid():
                found.add(int(name))
    return found


async def test_a_cancelled_read_kills_its_worker() -> None:
    before = readers()
    task = asyncio.create_task(read_document(pdf_bomb(1), "pdf", ReadLimits(cpu_s=60)))
    for _ in range(400):
        if readers() - before:
            break
        await asyncio.sleep(0.05)
    assert readers() - before, "a worker process reads"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):  # a loaded machine may take a moment to end it
        if not readers() - before:
            break
        await asyncio.sleep(0.05)
    assert not readers() - before


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("Hello, мир".encode("utf-16"), "Hello, мир"),
        ("Привет".encode("utf-8-sig"), "Привет"),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю.".encode("koi8-r"),
         "Съешь же ещё этих мягких французских булок, да выпей чаю."),
        ("Съешь же ещё этих мягких французских булок, да выпей чаю.".encode("cp1251"),
         "Съешь же ещё этих мягких французских булок, да выпей чаю."),
    ],
)  # fmt: skip
def test_text_is_decoded_by_its_encoding(data: bytes, text: str) -> None:
    assert decode_text(data) == text


def test_binary_is_refused() -> None:
    with pytest.raises(DocumentUnreadable) as raised:
        decode_text(bytes(range(256)) * 64)
    assert raised.value.reason == "binary"
