"""`topica import telegram|chatgpt` end to end: stored with the right ids and people,
re-imported without a new row, archived at once, recalled by `topica ask`, and filed under
the importing user only."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from cli.main import main
from tests.support.exports import chatgpt_conversations, full_export, write_json

pytestmark = pytest.mark.timeout(300)


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    folder = tmp_path_factory.mktemp("import")
    data = str(folder / "data")
    export = write_json(folder / "result.json", full_export())
    reports = []
    for _ in range(2):
        code, out, _ = run(
            "import",
            "telegram",
            str(export),
            "--chat",
            "Олег",
            "--chat",
            "Book club",
            "--user",
            "7",
            "--data-dir",
            data,
            "--json",
        )
        assert code == 0
        reports.append(json.loads(out))
    return Path(data), reports[0], reports[1]


def test_an_import_is_stored_archived_and_idempotent(imported) -> None:
    data, first, again = imported
    assert first["new_messages"] == first["messages"] == 10
    assert first["uncovered"] == [] and first["topics"]
    assert again["new_messages"] == 0
    assert first["import"]["skipped"] == {
        "service message": 1,
        "empty": 1,
        "type unsupported_future_type": 1,
        "chat not chosen": 2,
    }
    code, out, _ = run("export", "--user", "7", "--data-dir", str(data))
    assert code == 0
    exported = json.loads(out)
    messages = {m["external_id"]: m for m in exported["messages"]}
    assert messages["tg:3003:1"]["author"] == "Mark Twen"
    assert messages["tg:2002:2"]["created_at"].startswith("2023-11-14T22:15:20")
    assert all(m["topic_id"] is not None for m in messages.values())
    names = sorted(person["name"] for person in exported["people"])
    assert "Mark Twen" in names and "Олег" in names
    assert first["import"]["people_added"] == 2 and again["import"]["people_added"] == 0


def test_what_was_said_in_an_imported_chat_is_recalled(imported) -> None:
    data, _, _ = imported
    code, out, _ = run(
        "ask", "Когда я еду в Казань?", "--user", "7", "--data-dir", str(data), "--json"
    )
    assert code == 0
    answer = json.loads(out)
    recalled = {i for topic in answer["topics"] for i in topic["message_ids"]}
    assert "tg:2002:2" in recalled, answer["topics"]


def test_another_users_import_never_touches_the_first(imported, tmp_path: Path) -> None:
    data, _, _ = imported
    export = write_json(tmp_path / "conversations.json", chatgpt_conversations())
    code, out, _ = run(
        "import", "chatgpt", str(export), "--user", "8", "--data-dir", str(data), "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert report["new_messages"] == 5 and [c["name"] for c in report["import"]["chats"]] == [
        "Sourdough",
        "Porto trip",
    ]
    code, out, _ = run("topics", "--user", "8", "--data-dir", str(data), "--json")
    titles = [title for topic in json.loads(out) for title in topic["conversations"]]
    assert code == 0 and sorted(titles) == ["Porto trip", "Sourdough"]
    code, out, _ = run("topics", "--user", "8", "--data-dir", str(data))
    assert "↳ Sourdough" in out and "↳ Porto trip" in out
    code, out, _ = run("topics", "--user", "7", "--data-dir", str(data), "--json")
    titles = {title for topic in json.loads(out) for title in topic["conversations"]}
    assert titles == {"Олег", "Book club"}
    code, out, _ = run("export", "--user", "7", "--data-dir", str(data))
    assert not any(m["external_id"].startswith("chatgpt:") for m in json.loads(out)["messages"])
    code, out, _ = run("export", "--user", "8", "--data-dir", str(data))
    assert {m["external_id"][:3] for m in json.loads(out)["messages"]} == {"cha"}


def test_a_bad_export_is_one_line_and_stores_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bad = write_json(tmp_path / "result.json", [{"not": "telegram"}])
    code, _, err = run("import", "telegram", str(bad), "--data-dir", str(data))
    assert code == 2
    assert err.count("\n") == 1 and "not a Telegram Desktop JSON export" in err
    assert not data.exists()
