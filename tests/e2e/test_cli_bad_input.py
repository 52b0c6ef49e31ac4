"""Bad input to real `topica` processes: one line on stderr, exit 2 (3 for a service out
of reach), nothing stored and nothing created. Binary junk, endless or huge files, deep
nesting, a data directory that cannot be one, ids past 64 bits, a reader that goes away."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from stores.saved_sessions import SessionFormatError, parse_session, read_session
from tests.support.paths import ROOT, THREE_SITTINGS
from tests.support.processes import environment_without, free_port

pytestmark = pytest.mark.timeout(180)


def test_binary_junk_as_a_session_is_refused_with_nothing_stored(tmp_path: Path) -> None:
    junk = tmp_path / "junk.jsonl"
    # Not UTF-8 from the first byte: a first line of random bytes can happen to be valid
    # UTF-8 (about 1 run in 250), and is then refused as not JSON instead.
    junk.write_bytes(b"\xff\xfe" + os.urandom(4096) + b"\x00\xff\xfe")
    with pytest.raises(SessionFormatError, match="not UTF-8"):
        read_session(junk)
    finished = subprocess.run(
        [sys.executable, "-m", "cli.main", "ingest", str(junk), "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=environment_without("TOPICA_"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and "not UTF-8" in finished.stderr
    assert not (tmp_path / "topica.sqlite3").exists() or _message_count(tmp_path) == 0


def _message_count(data_dir: Path) -> int:
    with sqlite3.connect(data_dir / "topica.sqlite3") as db:
        return db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]


def topica(
    *args: str, env_extra: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess:
    """`python -m cli.main ARGS` with no Topica configuration from the environment but
    `env_extra`."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=ROOT,
        env={**environment_without("TOPICA_"), **(env_extra or {})},
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


@pytest.mark.parametrize("user", [str(2**63), str(-(2**63) - 1), "99999999999999999999999"])
def test_a_user_id_past_64_bits_is_a_usage_error(tmp_path: Path, user: str) -> None:
    finished = topica("topics", "--user", user, "--data-dir", str(tmp_path / "data"))
    assert finished.returncode == 2
    assert "argument --user" in finished.stderr and "out of range" in finished.stderr
    assert "Traceback" not in finished.stderr and not (tmp_path / "data").exists()


def test_dev_zero_as_a_session_is_refused_at_the_line_limit(tmp_path: Path) -> None:
    """Before: read whole, it grew without bound (killed at 2.5 GB)."""
    data_dir = tmp_path / "data"
    finished = topica(
        "ingest",
        "/dev/zero",
        "--data-dir",
        str(data_dir),
        env_extra={"TOPICA_INGEST_MAX_LINE_BYTES": "1048576"},
    )
    assert finished.returncode == 2
    assert finished.stderr == (
        "topica: error: /dev/zero:1: line longer than 1048576 bytes "
        "(TOPICA_INGEST_MAX_LINE_BYTES)\n"
    )
    assert not data_dir.exists()


def test_a_session_over_the_size_limit_is_refused_with_nothing_stored(tmp_path: Path) -> None:
    session = tmp_path / "big.jsonl"
    line = {"role": "user", "content": "x" * 100, "created_at": "2025-01-01T10:00:00"}
    session.write_text(
        "".join(json.dumps({**line, "id": f"m{n}"}) + "\n" for n in range(1000)),
        encoding="utf-8",
    )
    data_dir = tmp_path / "data"
    finished = topica(
        "ingest",
        str(session),
        "--data-dir",
        str(data_dir),
        env_extra={"TOPICA_INGEST_MAX_BYTES": "20000"},
    )
    assert finished.returncode == 2
    assert finished.stderr == (
        f"topica: error: {session}: larger than 20000 bytes (TOPICA_INGEST_MAX_BYTES)\n"
    )
    assert not data_dir.exists()


def test_json_nested_100000_deep_is_one_line_exit_2(tmp_path: Path) -> None:
    session = tmp_path / "deep.jsonl"
    session.write_text("[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    finished = topica("ingest", str(session), "--data-dir", str(tmp_path / "data"))
    assert finished.returncode == 2
    assert finished.stderr == f"topica: error: {session}:1: JSON nested too deeply\n"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_unescaped_line_separators_inside_json_strings_are_content(separator: str) -> None:
    """What `json.dumps(ensure_ascii=False)` writes: only "\\n" ends a line."""
    line = {"role": "user", "content": f"one{separator}two", "created_at": "2025-01-01T10:00:00"}
    text = json.dumps(line, ensure_ascii=False) + "\n"
    [message] = parse_session(text)
    assert message["content"] == f"one{separator}two"


def test_a_missing_session_file_creates_no_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    finished = topica("ingest", str(tmp_path / "missing.jsonl"), "--data-dir", str(data_dir))
    assert finished.returncode == 2
    assert (
        finished.stderr
        == f"topica: error: {tmp_path / 'missing.jsonl'}: No such file or directory\n"
    )
    assert not data_dir.exists()


@pytest.mark.parametrize("where", ["file", "under_file"])
@pytest.mark.parametrize("command", ["ingest", "topics"])
def test_a_data_dir_that_is_a_file_or_under_one_is_one_line(
    tmp_path: Path, where: str, command: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    data_dir = blocker if where == "file" else blocker / "data"
    args = [str(THREE_SITTINGS)] if command == "ingest" else []
    finished = topica(command, *args, "--data-dir", str(data_dir))
    assert finished.returncode == 2
    assert finished.stderr.count("\n") == 1 and finished.stderr.startswith("topica: error: ")
    assert str(data_dir) in finished.stderr and "Traceback" not in finished.stderr


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("ingested")
    finished = topica("ingest", str(THREE_SITTINGS), "--data-dir", str(data_dir))
    assert finished.returncode == 0, finished.stderr
    return data_dir


@pytest.mark.parametrize("command", [["topics", "--json"], ["topics"], ["export"]])
def test_a_reader_that_goes_away_ends_the_output_quietly(
    ingested: Path, command: list[str]
) -> None:
    """`topica topics --json | head -1`: the pipe closes before the output is written."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", *command, "--data-dir", str(ingested)],
        cwd=ROOT,
        env=environment_without("TOPICA_"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before a byte is written
    _, errors = process.communicate(timeout=120)
    assert errors == b""
    assert process.returncode == 1


def test_an_unreachable_bot_api_is_one_line_exit_3(tmp_path: Path) -> None:
    """Before: 97 lines of traceback and "Unclosed client session"."""
    finished = topica(
        "bot",
        "--data-dir",
        str(tmp_path / "data"),
        env_extra={
            "TOPICA_TELEGRAM_TOKEN": "123456:TEST",
            "TOPICA_TELEGRAM_API_URL": f"http://127.0.0.1:{free_port()}",
            "TOPICA_ALLOWED_USER_IDS": "1",
        },
    )
    assert finished.returncode == 3, finished.stderr
    errors = [line for line in finished.stderr.splitlines() if line.startswith("topica: error:")]
    assert len(errors) == 1 and "Telegram Bot API unreachable" in errors[0]
    assert "Traceback" not in finished.stderr and "Unclosed" not in finished.stderr
