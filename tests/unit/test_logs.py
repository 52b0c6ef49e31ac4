"""Structured logs: one JSON object a line with the record's extra fields."""

from __future__ import annotations

import json
import logging

from core.logs import JsonFormatter


def test_json_lines_carry_level_logger_message_and_extras() -> None:
    record = logging.LogRecord(
        "topica.bot", logging.WARNING, __file__, 1, "turn %s", ("late",), None
    )
    record.user = "207a5565df10a417"
    entry = json.loads(JsonFormatter().format(record))
    assert entry["level"] == "warning"
    assert entry["logger"] == "topica.bot"
    assert entry["message"] == "turn late"
    assert entry["user"] == "207a5565df10a417"
    assert entry["time"].endswith("+00:00")


def test_exceptions_are_kept_in_one_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = JsonFormatter().format(record)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["exception"]
