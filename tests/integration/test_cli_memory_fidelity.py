"""What becomes memory, through the command line: memory-only answers stay in the log but
never in a topic, and an older session ingested after live chat is archived in its own
time. Real SQLite, Chroma and encoder, through `cli.main.main`; no model configured, so
every answer is the memory-only one."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from cli.main import main
from nodes.response.offline_answer import WORDING
from tests.support.paths import THREE_SITTINGS as SESSION

pytestmark = pytest.mark.timeout(300)


def run_json(*argv: str) -> dict:
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(argv)) == 0
    return json.loads(output.getvalue())


def test_ask_twice_then_archive_all_and_no_topic_holds_a_memory_only_answer(
    tmp_path: Path,
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    run_json("ingest", str(SESSION), "--json", *data)
    question = "Что сказал ветеринар про Марципана?"
    first = run_json("ask", question, "--json", *data)
    second = run_json("ask", question + " Напомни.", "--json", *data)
    for turn in (first, second):
        assert turn["answered_by"] == "memory"
        assert isinstance(turn["message_id"], int) and isinstance(turn["answer_id"], int)
        assert turn["answer_id"] != turn["message_id"]
    intro = WORDING["ru"].intro
    assert intro in first["answer"]
    # The second memory-only answer quotes the conversation, never the first answer.
    assert second["answer"].count(intro) == 1
    assert (
        "Ранее в этом разговоре" not in second["answer"]
        or intro not in (second["answer"].split("Ранее в этом разговоре", 1)[1])
    )

    archived = run_json("archive", "--all", "--json", *data)
    assert archived["messages"] == 2  # the two questions; the answers never wait
    assert archived["uncovered"] == [] and archived["waiting"] == []
    assert archived["topics"], "the questions were archived"

    export = run_json("export", *data)
    by_row = {message["id"]: message for message in export["messages"]}
    answers = [m for m in export["messages"] if m["kind"] == "memory_only_answer"]
    assert {m["id"] for m in answers} == {first["answer_id"], second["answer_id"]}
    assert all(m["topic_id"] is None for m in answers)
    assert by_row[first["message_id"]]["kind"] == "conversation"
    assert by_row[first["message_id"]]["topic_id"] is not None
    assert all(intro not in topic["summary"] for topic in export["topics"])
    answer_ids = {m["external_id"] for m in answers}
    assert not any(answer_ids & set(topic["message_ids"]) for topic in export["topics"])


def test_an_old_session_ingested_after_live_chat_is_archived_in_its_own_time(
    tmp_path: Path,
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    live = run_json("ask", "Напомни купить корм коту сегодня вечером", "--json", *data)
    old_session = tmp_path / "april.jsonl"
    lines = [
        {
            "id": f"a{i}",
            "role": "user" if i % 2 else "assistant",
            "content": text,
            "created_at": f"2026-04-12T10:{i:02d}:00+02:00",
        }
        for i, text in enumerate(
            [
                "Планирую поездку в Казань на майские, что посмотреть?",
                "Кремль, мечеть Кул-Шариф, улица Баумана и Старо-Татарская слобода.",
                "А где попробовать эчпочмак?",
                "В любой чайной на Баумана, или в Доме татарской кулинарии.",
            ],
            start=1,
        )
    ]
    old_session.write_text(
        "\n".join(json.dumps(line, ensure_ascii=False) for line in lines), encoding="utf-8"
    )
    report = run_json("ingest", str(old_session), "--json", *data)
    assert report["uncovered"] == []
    april = {"a1", "a2", "a3", "a4"}
    for topic in report["topics"]:
        assert set(topic["message_ids"]) <= april
        assert topic["first_message_at"].startswith("2026-04-12")
        assert topic["last_message_at"].startswith("2026-04-12")

    export = run_json("export", *data)
    question = next(m for m in export["messages"] if m["id"] == live["message_id"])
    # Ingest archives everything: the live question went into a topic of its own time.
    live_topic = next(t for t in export["topics"] if t["id"] == question["topic_id"])
    assert set(live_topic["message_ids"]) == {question["external_id"]}
    assert not live_topic["first_message_at"].startswith("2026-04-12")
