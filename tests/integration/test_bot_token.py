"""A malformed bot token is bad input: one line naming the variable, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main


@pytest.mark.parametrize("token", ["not-a-token", "7777", "abc:def", "12 34:AAE"])
def test_a_malformed_token_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch, capsys, token: str
) -> None:
    monkeypatch.setenv("TOPICA_TELEGRAM_TOKEN", token)
    monkeypatch.setenv("TOPICA_ALLOWED_USER_IDS", "1")
    monkeypatch.setenv("TOPICA_TELEGRAM_API_URL", "http://127.0.0.1:9")

    assert main(["bot", "--data-dir", str(tmp_path / "data")]) == 2

    error = capsys.readouterr().err
    assert error.startswith("topica: error: TOPICA_TELEGRAM_TOKEN is malformed: ")
    assert error.count("\n") == 1, error
    assert token not in error
    assert "Traceback" not in error and "TokenValidationError" not in error
    assert not (tmp_path / "data").exists(), "refused before anything is created"
