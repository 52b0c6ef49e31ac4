"""Saved sessions (JSONL): a valid file is read in order; any bad line fails the whole file
with its line number (the real ingest path storing nothing of it:
tests/integration/test_session_ingest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.saved_sessions import SessionFormatError, parse_session, read_session
from tests.support.sessions import GOOD_SESSION, session_line, write_session


def test_a_valid_file_is_read_in_order_with_all_fields(tmp_path: Path):
    messages = read_session(
        write_session(tmp_path, [GOOD_SESSION[0], "", GOOD_SESSION[1], "   ", GOOD_SESSION[2]])
    )

    assert [m["external_id"] for m in messages[:2]] == ["a1", "a2"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0] == {
        "external_id": "a1",
        "role": "user",
        "content": "Привет! Planning a trip",
        "created_at": "2026-03-02T09:00:00+01:00",
        "author": "Alexei",
    }
    assert messages[1]["author"] is None


def test_a_line_without_id_gets_a_stable_content_hash_id():
    first = parse_session("\n".join(GOOD_SESSION))[2]["external_id"]
    again = parse_session("\n".join(GOOD_SESSION))[2]["external_id"]
    edited = parse_session(GOOD_SESSION[2].replace("Valencia", "Madrid"))[0]["external_id"]

    assert first.startswith("h:")
    assert first == again
    assert edited != first


@pytest.mark.parametrize(
    ("bad_line", "expected"),
    [
        ('{"id": "x", "role": "user", "content": "unterminated', "not valid JSON"),
        ("not json at all", "not valid JSON"),
        (session_line(id="x", role="user", created_at="2026-03-02T09:05:00"), "content"),
        (session_line(id="x", content="hi", created_at="2026-03-02T09:05:00"), "role"),
        (
            session_line(id="x", role="system", content="hi", created_at="2026-03-02T09:05:00"),
            "role",
        ),
        (session_line(id="x", role="user", content="hi", created_at="yesterday"), "created_at"),
        (
            session_line(id="x", role="user", content="hi", created_at="2026-13-45T09:00:00"),
            "month",
        ),
        (session_line(id="x", role="user", content="hi"), "created_at"),
        (
            session_line(id="x", role="user", content=42, created_at="2026-03-02T09:05:00"),
            "content",
        ),
        (
            session_line(id="x", role="user", content="hi", created_at="2026-03-02", mood="happy"),
            "mood",
        ),
        ("[1, 2, 3]", "found a JSON array"),
        (
            session_line(id="a2", role="user", content="dup", created_at="2026-03-02T09:05:00"),
            "already used on line 2",
        ),
    ],
    ids=[
        "truncated-json",
        "not-json",
        "missing-content",
        "missing-role",
        "bad-role",
        "bad-timestamp",
        "impossible-date",
        "missing-timestamp",
        "content-not-text",
        "unknown-field",
        "not-an-object",
        "duplicate-id",
    ],
)
def test_a_bad_line_fails_the_file_naming_its_line_number(tmp_path: Path, bad_line, expected):
    path = write_session(tmp_path, [*GOOD_SESSION, bad_line, GOOD_SESSION[0].replace("a1", "a9")])

    with pytest.raises(SessionFormatError) as error:
        read_session(path)

    message = str(error.value)
    assert message.startswith(f"{path}:4:")
    assert expected in message


def test_line_numbers_count_blank_lines():
    text = "\n".join([GOOD_SESSION[0], "", "", "{broken"])
    with pytest.raises(SessionFormatError, match=r"^demo\.jsonl:4: not valid JSON"):
        parse_session(text, "demo.jsonl")


def test_an_empty_file_is_an_error(tmp_path: Path):
    with pytest.raises(SessionFormatError, match="no messages"):
        read_session(write_session(tmp_path, ["", "  "]))


def test_unreadable_files_are_session_errors(tmp_path: Path):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SessionFormatError, match="not UTF-8"):
        read_session(binary)
    with pytest.raises(SessionFormatError, match=r"missing\.jsonl"):
        read_session(tmp_path / "missing.jsonl")


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('[{"role": "user", "content": "hi", "created_at": "2026-03-02T09:00:00"}]', "array"),
        ('"just a string"', "a string"),
        ("42", "a number"),
        ("null", "null"),
    ],
)
def test_a_line_that_is_not_a_json_object_is_explained_in_plain_words(text: str, found: str):
    """A JSON array (a whole conversation exported as one document) or any other value
    is named as such, without the parser's internal model names."""
    with pytest.raises(SessionFormatError) as raised:
        parse_session(text, source="chat.json")

    message = str(raised.value)
    assert message.startswith("chat.json:1: expected one message a line, a JSON object")
    assert found in message
    assert "SessionLine" not in message and "dictionary" not in message
