"""Logging set-up: readable lines for people, one JSON object a line for log collectors."""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import UTC, datetime

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


SERVICE_LOGGERS = ("bot",)
"""Loggers of long-running services, at INFO even without `--verbose`: a service says
when it starts, how it is set up and what it refuses (strangers, group chats)."""


def configure_logging(verbose: bool, json_lines: bool) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter()
        if json_lines
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
    for name in SERVICE_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
