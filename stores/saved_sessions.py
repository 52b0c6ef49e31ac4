"""Saved sessions: JSONL files of messages, read all-or-nothing.

One message a line:
`{"id"?: str, "role": "user"|"assistant", "content": str, "created_at": ISO-8601, "author"?: str}`.
Any bad line fails the whole file with its line number, so nothing of a
malformed file is ever stored. Lines end at "\n" only: JSON strings may hold U+2028,
U+2029 or U+0085 unescaped (`json.dumps(ensure_ascii=False)` writes them so), which
`str.splitlines()` would cut. A file is read within bounds (its size, its longest
line), so `/dev/zero` or a runaway file is refused instead of filling memory.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.errors import SessionFormatError
from core.records import NewMessage

MAX_CONTENT_CHARS = 1_000_000


class SessionLine(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    id: str | int | None = None
    role: Literal["user", "assistant"]
    content: str = Field(max_length=MAX_CONTENT_CHARS)
    created_at: str
    author: str | None = None

    @field_validator("created_at")
    @classmethod
    def _iso_8601(cls, value: str) -> str:
        datetime.fromisoformat(value)
        return value


def external_id_for(line: SessionLine) -> str:
    """The file's id, or a content hash so re-ingesting an id-less file stores nothing twice."""
    if line.id is not None and str(line.id).strip():
        return str(line.id)
    digest = hashlib.sha1(
        f"{line.created_at}\x1f{line.role}\x1f{line.author}\x1f{line.content}".encode()
    ).hexdigest()
    return f"h:{digest[:16]}"


def json_kind(value: object) -> str:
    """How a JSON value that is not an object reads to a person."""
    kinds = {list: "a JSON array [...]", str: "a string", bool: "true or false"}
    if value is None:
        return "null"
    return kinds.get(type(value), "a number")


def parse_session(text: str, source: str = "<session>") -> list[NewMessage]:
    return parse_lines(text.split("\n"), source)


def parse_lines(lines: Iterable[str], source: str) -> list[NewMessage]:
    """The messages of a session's lines (numbered from 1), all or nothing."""
    messages: list[NewMessage] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
            if not isinstance(value, dict):
                raise SessionFormatError(
                    f"{source}:{number}: expected one message a line, a JSON object "
                    f"{{...}}, found {json_kind(value)} (a saved session is JSONL, not a "
                    "JSON document)"
                )
            line = SessionLine.model_validate(value)
        except json.JSONDecodeError as error:
            raise SessionFormatError(f"{source}:{number}: not valid JSON ({error.msg})") from None
        except RecursionError:
            raise SessionFormatError(f"{source}:{number}: JSON nested too deeply") from None
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "line"
            raise SessionFormatError(f"{source}:{number}: {where}: {problem['msg']}") from None
        external_id = external_id_for(line)
        if external_id in seen:
            raise SessionFormatError(
                f"{source}:{number}: id {external_id!r} already used on line {seen[external_id]}"
            )
        seen[external_id] = number
        messages.append(
            NewMessage(
                external_id=external_id,
                role=line.role,
                content=line.content,
                created_at=line.created_at,
                author=line.author,
            )
        )
    if not messages:
        raise SessionFormatError(f"{source}: no messages")
    return messages


def bounded_lines(path: Path, max_bytes: int, max_line_bytes: int) -> Iterator[str]:
    """The file's lines (split on "\n" only), refused past `max_bytes` in all or a line
    past `max_line_bytes`: never more than that is read."""
    read = 0
    with path.open("rb") as file:
        for number in itertools.count(1):
            raw = file.readline(max_line_bytes + 1)
            if not raw:
                return
            read += len(raw)
            if read > max_bytes:
                raise SessionFormatError(
                    f"{path}: larger than {max_bytes} bytes (TOPICA_INGEST_MAX_BYTES)"
                )
            if len(raw) > max_line_bytes and not (
                len(raw) == max_line_bytes + 1 and raw.endswith(b"\n")
            ):
                raise SessionFormatError(
                    f"{path}:{number}: line longer than {max_line_bytes} bytes "
                    "(TOPICA_INGEST_MAX_LINE_BYTES)"
                )
            try:
                yield raw.decode("utf-8").removesuffix("\n")
            except UnicodeDecodeError as error:
                raise SessionFormatError(
                    f"{path}:{number}: not UTF-8 text ({error.reason})"
                ) from None


DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


def read_session(
    path: Path,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> list[NewMessage]:
    """A saved session file's messages, all or nothing (`SessionFormatError` otherwise)."""
    try:
        return parse_lines(bounded_lines(path, max_bytes, max_line_bytes), str(path))
    except OSError as error:
        raise SessionFormatError(f"{path}: {error.strerror}") from None
