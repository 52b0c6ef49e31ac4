"""What an export reader returns, and the bounded opening of an export file or zip."""

from __future__ import annotations

import io
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO

from core.errors import ExportFormatError
from core.records import NewMessage

MAX_ZIP_MEMBERS = 100_000
MAX_ZIP_RATIO = 200
"""A member that inflates more than this many times its compressed size is a zip bomb."""


@dataclass
class Chat:
    """One conversation of an export: a Telegram chat or a ChatGPT conversation."""

    id: str
    name: str
    type: str
    messages: int = 0


@dataclass
class Person:
    """Someone who wrote in the exported chats, keyed by the source's own id."""

    source_id: str
    names: list[str] = field(default_factory=list)


ID_PREFIXES = {"telegram": "tg", "chatgpt": "chatgpt"}
"""Each source's prefix of its message ids: `<prefix>:<chat>:<message>`."""


@dataclass
class ImportedHistory:
    source: str
    messages: list[NewMessage] = field(default_factory=list)
    chats: list[Chat] = field(default_factory=list)
    people: dict[str, Person] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)

    def meet(self, source_id: str, name: str) -> None:
        person = self.people.setdefault(source_id, Person(source_id))
        if name and name not in person.names:
            person.names.append(name)

    def titles(self) -> dict[str, str]:
        """Each named chat's title by its conversation key, its messages' id prefix."""
        prefix = ID_PREFIXES[self.source]
        return {f"{prefix}:{chat.id}": chat.name for chat in self.chats if chat.name.strip()}

    def in_time_order(self) -> list[NewMessage]:
        return sorted(self.messages, key=lambda message: message["created_at"])

    def summary(self) -> dict:
        dates = [message["created_at"] for message in self.messages]
        return {
            "source": self.source,
            "chats": [chat.__dict__ for chat in self.chats],
            "messages": len(self.messages),
            "first_at": min(dates, default=None),
            "last_at": max(dates, default=None),
            "people": len(self.people),
            "skipped": dict(self.skipped),
        }


def json_error(error: Exception) -> ExportFormatError:
    """A JSON parser's complaint as one line: the file is cut short, or not JSON."""
    first = (str(error).strip().splitlines() or [""])[0]
    complete = "premature" in first.lower()
    what = "not a complete JSON export (cut short?)" if complete else "not JSON"
    return ExportFormatError(f"{what}: {first}" if first else what)


def utc_iso(seconds: float | str) -> str:
    return datetime.fromtimestamp(float(seconds), UTC).isoformat(timespec="seconds")


class _CappedReader(io.RawIOBase):
    """A stream that refuses to yield more than `limit` bytes (whatever a header said)."""

    def __init__(self, stream: IO[bytes], limit: int, what: str) -> None:
        self._stream, self._left, self._what = stream, limit, what

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        data = self._stream.read(min(len(buffer), self._left + 1))
        self._left -= len(data)
        if self._left < 0:
            raise ExportFormatError(f"{self._what}: larger than allowed (TOPICA_INGEST_MAX_BYTES)")
        buffer[: len(data)] = data
        return len(data)


def _safe_member(info: zipfile.ZipInfo, path: Path) -> None:
    parts = PurePosixPath(info.filename).parts
    if info.filename.startswith(("/", "\\")) or ".." in parts or ":" in info.filename:
        raise ExportFormatError(f"{path}: zip member {info.filename!r} points outside its folder")
    if info.compress_size and info.file_size / info.compress_size > MAX_ZIP_RATIO:
        raise ExportFormatError(f"{path}: zip member {info.filename!r} inflates suspiciously")


def _zip_member(archive: zipfile.ZipFile, path: Path, names: tuple[str, ...]) -> zipfile.ZipInfo:
    members = archive.infolist()
    if len(members) > MAX_ZIP_MEMBERS:
        raise ExportFormatError(f"{path}: more than {MAX_ZIP_MEMBERS} files in the zip")
    for info in members:
        _safe_member(info, path)
    found = [info for info in members if PurePosixPath(info.filename).name in names]
    if not found:
        raise ExportFormatError(f"{path}: the zip holds no {' or '.join(names)}")
    return min(found, key=lambda info: len(PurePosixPath(info.filename).parts))


@contextmanager
def open_export(path: Path, names: tuple[str, ...], max_bytes: int) -> Iterator[IO[bytes]]:
    """The export's JSON as a byte stream: the file itself, or its member named one of
    `names` when it is a zip; never more than `max_bytes` of it is read."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                member = _zip_member(archive, path, names)
                with archive.open(member) as stream:
                    yield io.BufferedReader(_CappedReader(stream, max_bytes, str(path)))
            return
        with path.open("rb") as stream:
            yield io.BufferedReader(_CappedReader(stream, max_bytes, str(path)))
    except OSError as error:
        raise ExportFormatError(f"{path}: {error.strerror or error}") from None
    except zipfile.BadZipFile as error:
        raise ExportFormatError(f"{path}: a broken zip ({error})") from None
