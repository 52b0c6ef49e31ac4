"""Saved sessions: JSONL files of messages, read all-or-nothing.

One message a line:
`{"id"?: str, "role": "user"|"assistant", "content": str, "created_at": ISO-8601, "author"?: str}`.
Any bad line fails the whole file with its line number, so nothing of a
malformed file is ever stored.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from core.records import NewMessage

MAX_CONTENT_CHARS = 1_000_000


class SessionFormatError(ValueError):
    """A saved session that cannot be read; says which line and why."""


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


def parse_session(text: str, source: str = "<session>") -> list[NewMessage]:
    messages: list[NewMessage] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = SessionLine.model_validate(json.loads(raw))
        except json.JSONDecodeError as error:
            raise SessionFormatError(f"{source}:{number}: not valid JSON ({error.msg})") from None
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


def read_session(path: Path) -> list[NewMessage]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise SessionFormatError(f"{path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise SessionFormatError(f"{path}: {error.strerror}") from None
    return parse_session(text, str(path))
