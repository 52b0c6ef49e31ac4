"""Reading a document's text with hard bounds, wherever files are read.

A PDF is read by langchain-community's `PyPDFParser` (pypdf) in a worker process of its
own (`python -m app.reading`), never in a thread of the caller: the worker runs at a
lower priority under a CPU-time limit (`RLIMIT_CPU`) and an address-space limit
(`RLIMIT_AS`), the caller kills it past a wall-clock limit or when its turn is
cancelled, and before any page is parsed the document is refused past a page count or a
total of decompressed content-stream bytes (pages that share one stream count it once
per page: parsing costs per page). Nothing of a read outlives the call, and
`stop_readers()` (at shutdown) kills every worker at once and refuses reads until
`resume_readers()`, so no read holds a stopping process up. Text documents
are decoded in the caller: BOM first, then UTF-8, then the encoding charset-normalizer
detects; bytes that are no text are refused as binary.

A document that cannot be read raises `DocumentUnreadable` with a reason the user is
told: `unreadable`, `encrypted`, `too_complex` (a bound was reached) or `binary`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Literal

from core.limits import (
    DOCUMENT_MAX_DECOMPRESSED_BYTES,
    DOCUMENT_MAX_PAGES,
    DOCUMENT_READ_CPU_S,
    DOCUMENT_READ_MEMORY_MB,
    DOCUMENT_READ_TIMEOUT_S,
    MAX_DOCUMENT_CHARS,
)

Reason = Literal["unreadable", "encrypted", "too_complex", "binary"]

BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
CONTROL_SHARE = 0.05
"""Text with more control characters than this (tabs and line ends aside) is binary."""


_workers: set[asyncio.subprocess.Process] = set()
_stopped = False


def stop_readers() -> int:
    """Kill every worker reading now and refuse reads until `resume_readers()`; the
    reads cut short raise `too_complex`. Returns how many workers were killed."""
    global _stopped
    _stopped = True
    killed = 0
    for process in list(_workers):
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
                killed += 1
    return killed


def resume_readers() -> None:
    """Accept reads again (a process that starts serving after a stop)."""
    global _stopped
    _stopped = False


class DocumentUnreadable(ValueError):
    """A document whose text cannot be had; `reason` says why, `detail` for the log."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason: Reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ReadLimits:
    """The bounds of one document's reading."""

    cpu_s: float = DOCUMENT_READ_CPU_S
    memory_mb: int = DOCUMENT_READ_MEMORY_MB
    timeout_s: float = DOCUMENT_READ_TIMEOUT_S
    max_pages: int = DOCUMENT_MAX_PAGES
    max_decompressed_bytes: int = DOCUMENT_MAX_DECOMPRESSED_BYTES
    max_chars: int = MAX_DOCUMENT_CHARS
    """Text past this is not extracted (pages after it are not parsed)."""

    @classmethod
    def from_settings(cls, settings: Any) -> ReadLimits:
        return cls(
            cpu_s=settings.document_read_cpu_s,
            memory_mb=settings.document_read_memory_mb,
            timeout_s=settings.document_read_timeout_s,
            max_pages=settings.document_max_pages,
            max_decompressed_bytes=settings.document_max_decompressed_bytes,
            max_chars=settings.max_document_chars,
        )


async def read_document(
    data: bytes, kind: Literal["pdf", "text"], limits: ReadLimits | None = None
) -> str:
    """A document's text: a PDF's pages joined by blank lines (read in a bounded worker
    process, up to a little past `max_chars`), or decoded text. Raises
    `DocumentUnreadable`."""
    limits = limits or ReadLimits()
    if kind == "text":
        return await asyncio.to_thread(decode_text, data)
    return await read_pdf(data, limits)


async def read_pdf(data: bytes, limits: ReadLimits) -> str:
    """A PDF's text from a worker process that is killed past `limits`, on cancel or by
    `stop_readers()`."""
    if _stopped:
        raise DocumentUnreadable("too_complex", "reading stopped: shutting down")
    arguments = [
        str(limits.cpu_s),
        str(limits.memory_mb),
        str(limits.max_pages),
        str(limits.max_decompressed_bytes),
        str(limits.max_chars),
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.reading",
        *arguments,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    _workers.add(process)
    if _stopped:  # stopped while the worker started
        process.kill()
    try:
        output, _ = await asyncio.wait_for(process.communicate(data), limits.timeout_s)
    except TimeoutError:
        raise DocumentUnreadable("too_complex", f"not read within {limits.timeout_s:g} s") from None
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await asyncio.shield(process.wait())
        _workers.discard(process)
    return _worker_result(process.returncode, output)


def _worker_result(returncode: int | None, output: bytes) -> str:
    if returncode == -signal.SIGKILL and _stopped:
        raise DocumentUnreadable("too_complex", "reading stopped: shutting down")
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise DocumentUnreadable("too_complex", "CPU-time limit reached")
    try:
        result = json.loads(output)
    except ValueError:
        raise DocumentUnreadable("unreadable", f"reader exited with {returncode}") from None
    if "error" in result:
        raise DocumentUnreadable(result["error"], result.get("detail", ""))
    return str(result["text"])


def decode_text(data: bytes) -> str:
    """Text by its BOM, else UTF-8, else the detected encoding; `binary` if none fits."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            return _checked(data.decode(encoding, errors="replace"))
    try:
        return _checked(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise DocumentUnreadable("binary", "no text encoding fits")
    return _checked(str(best))


def _checked(text: str) -> str:
    controls = sum(1 for char in text if ord(char) < 32 and char not in "\t\n\r\f")
    if text and controls > CONTROL_SHARE * len(text):
        raise DocumentUnreadable("binary", f"{controls} control characters")
    return text


# -- the worker process ----------------------------------------------------------------


def _limit_self(cpu_s: float, memory_mb: int) -> None:
    import resource

    cpu = max(1, int(cpu_s + 0.999))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    with contextlib.suppress(OSError):
        os.nice(10)


def _stream_bytes(value: Any, seen: dict[int, int]) -> int:
    """Decompressed bytes of a page's content (a stream or an array of streams)."""
    from pypdf.generic import ArrayObject, IndirectObject

    if isinstance(value, ArrayObject):
        return sum(_stream_bytes(item, seen) for item in value)
    key = value.idnum if isinstance(value, IndirectObject) else id(value)
    if key not in seen:
        stream = value.get_object()
        seen[key] = len(stream.get_data()) if hasattr(stream, "get_data") else 0
    return seen[key]


def _pdf_text(data: bytes, max_pages: int, max_bytes: int, max_chars: int) -> str:
    import io

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            decrypted = bool(reader.decrypt(""))
        except Exception:
            decrypted = False
        if not decrypted:
            raise DocumentUnreadable("encrypted", "a password is needed")
    pages = reader.pages
    if len(pages) > max_pages:
        raise DocumentUnreadable("too_complex", f"{len(pages)} pages (at most {max_pages})")
    seen: dict[int, int] = {}
    total = 0
    for page in pages:
        contents = page.get("/Contents")
        total += 0 if contents is None else _stream_bytes(contents, seen)
        if total > max_bytes:
            raise DocumentUnreadable("too_complex", f"over {max_bytes} decompressed bytes")
    with warnings.catch_warnings():  # the package's notice on import, not the reader's concern
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.document_loaders.parsers.pdf import PyPDFParser
    from langchain_core.documents.base import Blob

    texts: list[str] = []
    length = 0
    blob = Blob.from_data(data, mime_type="application/pdf")
    for page in PyPDFParser().lazy_parse(blob):
        text = page.page_content.strip()
        if text:
            texts.append(text)
            length += len(text) + 2
        if length > max_chars:
            break
    return "\n\n".join(texts)


def _worker_main(arguments: list[str]) -> None:
    cpu_s, memory_mb, max_pages, max_bytes, max_chars = arguments
    _limit_self(float(cpu_s), int(memory_mb))
    data = sys.stdin.buffer.read()
    try:
        result: dict[str, str] = {
            "text": _pdf_text(data, int(max_pages), int(max_bytes), int(max_chars))
        }
    except DocumentUnreadable as error:
        result = {"error": error.reason, "detail": error.detail}
    except MemoryError:
        result = {"error": "too_complex", "detail": "memory limit reached"}
    except Exception as error:
        result = {"error": "unreadable", "detail": f"{type(error).__name__}: {error}"[:200]}
    sys.stdout.write(json.dumps(result))


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
