"""`redact`: no bot token, registered secret or URL password survives in a log line."""

from __future__ import annotations

import json
import logging

from core.logs import JsonFormatter, RedactingFormatter, add_secrets, redact


def test_tokens_passwords_and_registered_secrets_are_hidden() -> None:
    token = "7123456789:AAH4xXJm_oq0-3ZkYdEsTvb8cqQWq7hJxyz"
    add_secrets(["sk-local-secret-key"])
    line = (
        f"GET https://api.telegram.org/file/bot{token}/voice/file_3.oga failed; "
        "postgresql://admin:Hunter2@db:5432/topica; key sk-local-secret-key"
    )
    hidden = redact(line)
    assert token not in hidden and "Hunter2" not in hidden and "sk-local" not in hidden
    assert "/file/bot***/voice" in hidden and "postgresql://admin:***@db:5432" in hidden


def test_a_json_line_with_a_traceback_is_redacted() -> None:
    add_secrets(["123456:TEST-TOKEN"])
    formatter = RedactingFormatter(JsonFormatter())
    try:
        raise ConnectionError("http://127.0.0.1/file/bot123456:TEST-TOKEN/a.txt")
    except ConnectionError as error:
        record = logging.LogRecord("bot", logging.WARNING, "", 0, "failed: %r", (error,), None)
        record.exc_info = (type(error), error, error.__traceback__)
    line = formatter.format(record)
    assert "TEST-TOKEN" not in line
    assert "bot***" in json.loads(line)["exception"]
