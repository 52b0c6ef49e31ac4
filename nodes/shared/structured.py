"""JSON replies from chat models: JSON mode, lenient parsing, strict validation.

Providers wrap JSON in markdown fences, add prose around it or cut it short;
`json_repair` (a maintained library) recovers what can be recovered, then the
pydantic schema decides whether the result is usable.
"""

from __future__ import annotations

import json
import re
from typing import TypeVar

import json_repair
from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ValidationError

SchemaT = TypeVar("SchemaT", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


class LLMOutputError(ValueError):
    """The model answered, but not with what was asked for (JSON this schema accepts)."""


class EmptyReplyError(LLMOutputError):
    """The model answered with nothing."""


def message_text(message: BaseMessage) -> str:
    """The text of a message whose content may be a string or a list of parts."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str) or part.get("type") == "text"
    )


def parse_json_value(text: str) -> object:
    """Parse JSON that may be fenced, surrounded by prose or slightly broken."""
    cleaned = _FENCE.sub("", text.strip())
    if not cleaned:
        raise EmptyReplyError("empty reply where JSON was expected")
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        repaired = json_repair.loads(cleaned)
    if repaired in ("", None, [], {}) and cleaned not in ("[]", "{}"):
        raise LLMOutputError(f"reply is not JSON: {cleaned[:120]!r}")
    return repaired


def needs_mending(text: str) -> bool:
    """Whether the reply's JSON (unfenced) is not valid as written."""
    try:
        json.loads(_FENCE.sub("", text.strip()))
    except json.JSONDecodeError:
        return True
    return False


def parse_json_reply(text: str, schema: type[SchemaT]) -> SchemaT:
    value = parse_json_value(text)
    try:
        return schema.model_validate(value)
    except ValidationError as error:
        raise LLMOutputError(f"reply does not match {schema.__name__}: {error}") from error
