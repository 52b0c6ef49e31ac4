"""`topica copy` refusing what it must not touch, in one clear line with exit 2: system
schemas and reserved words as the target schema; a mistyped URL's password never
printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main

UNREACHABLE = "postgresql://admin:Secret-Pass@127.0.0.1:9/topica"


@pytest.fixture
def sqlite_dir(tmp_path: Path) -> Path:
    (tmp_path / "topica.sqlite3").touch()
    return tmp_path


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ("information_schema", "system schema"),
        ("pg_catalog", "system schema"),
        ("pg_toast", "system schema"),
        ("select", "reserved word"),
        ("user", "reserved word"),
    ],
)
def test_system_and_reserved_schemas_are_refused(
    sqlite_dir: Path, schema: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["copy", "--from", str(sqlite_dir), "--to", UNREACHABLE, "--schema", schema])
    error = capsys.readouterr().err
    assert status == 2, error
    assert why in error and len(error.strip().splitlines()) == 1
    assert "Secret-Pass" not in error


def test_a_mistyped_url_is_printed_without_its_password(
    sqlite_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mistyped = "postgresq://admin:Secret-Pass@db.example:5432/topica"
    status = main(["copy", "--from", str(sqlite_dir), "--to", mistyped])
    error = capsys.readouterr().err
    assert status == 2
    assert "postgresq://admin:***@db.example:5432/topica" in error
    assert "Secret-Pass" not in error
