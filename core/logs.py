"""Logging set-up: readable lines for people, one JSON object a line for log collectors."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

_SALT = "topica-user:"


def user_key(user_id: int) -> str:
    """A stable pseudonym for a user id, safe to put in logs, traces and thread ids."""
    return hashlib.sha256(f"{_SALT}{user_id}".encode()).hexdigest()[:16]


_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", ...extra fields, "exception"?}` per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((key, value) for key, value in record.__dict__.items() if key not in _STANDARD)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


_URL_PASSWORD = re.compile(r"(://[^/\s:@]*):[^/\s@]+@")
_BOT_TOKEN = re.compile(r"(?<![0-9])\d{5,}:[A-Za-z0-9_-]{30,}")
REDACTED = "***"
_secrets: set[str] = set()


def add_secrets(values: Iterable[str | None]) -> None:
    """Values `redact` hides from now on (this process's tokens, keys, passwords)."""
    _secrets.update(value for value in values if value and len(value) >= 4)


def secrets_of(settings: Any) -> list[str]:
    """Every secret value of `settings` (its `SecretStr` fields)."""
    values = (getattr(settings, name) for name in type(settings).model_fields)
    return [value.get_secret_value() for value in values if hasattr(value, "get_secret_value")]


def redact(text: str) -> str:
    """`text` without a secret: the registered values, any Telegram bot token, the password
    of any URL (`postgresql://user:***@host`)."""
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _BOT_TOKEN.sub(REDACTED, text)
    return _URL_PASSWORD.sub(rf"\1:{REDACTED}@", text)


class RedactingFormatter(logging.Formatter):
    """Another formatter's line (message, extra fields, traceback) passed through `redact`."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


SERVICE_LOGGERS = ("bot",)
"""Loggers of long-running services, at INFO even without `--verbose`: a service says
when it starts, how it is set up and what it refuses (strangers, group chats)."""


def configure_logging(verbose: bool, json_lines: bool, secrets: Iterable[str] = ()) -> None:
    """Log lines on stderr, every one of them redacted (`redact`, `secrets` added)."""
    add_secrets(secrets)
    handler = logging.StreamHandler()
    inner = (
        JsonFormatter()
        if json_lines
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    handler.setFormatter(RedactingFormatter(inner))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    for name in SERVICE_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
