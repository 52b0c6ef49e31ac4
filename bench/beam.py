"""BEAM conversations (a folder laid out as BEAM's `chats/`) as Topica sessions.

Each conversation (`<size>/<n>/chat.json`, named `<size>/<n>`) becomes one user's
history with its real roles: the user's messages as `user`, the assistant's as
`assistant`, the message id as the external id. A batch is one session at its date
(the batch's `time_anchor`, else the first one a message of the batch carries, else a
week after the previous batch); its messages are a minute apart. The generation
marker that ends a user message (` ->-> 1,1`) is stripped. Questions come from
`<size>/<n>/probing_questions/probing_questions.json`, their type as the category and
the `source_chat_ids` (a list, or a dict of lists) as the evidence; `abstention`
questions have none. `BEAM` is the benchmark for the shared harness (`eval beam`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.benchmark import Benchmark
from bench.locomo import Conversation, Question
from core.records import NewMessage

ABSTENTION = "abstention"
QUESTION_TYPES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary")
TURN_SPACING = timedelta(minutes=1)
BATCH_SPACING = timedelta(days=7)
FIRST_DATE = datetime(2024, 1, 1, 9, 0)
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


def strip_marker(text: str) -> str:
    """The message without its trailing generation marker (` ->-> 1,1`)."""
    return _MARKER.sub("", text).strip()


def parse_anchor(value: str) -> datetime:
    """BEAM's "March-15-2024", at nine in the morning."""
    return datetime.strptime(value.strip(), "%B-%d-%Y").replace(hour=9)


def flatten_ids(raw: Any) -> list[str]:
    """Evidence ids from a list or a dict of lists (nested any depth), in order, once each."""
    if raw is None:
        return []
    if isinstance(raw, dict):
        return list(dict.fromkeys(i for value in raw.values() for i in flatten_ids(value)))
    if isinstance(raw, list):
        return list(dict.fromkeys(i for value in raw for i in flatten_ids(value)))
    return [str(raw)]


def batch_start(batch: dict[str, Any], previous: datetime | None) -> datetime:
    anchors = [batch.get("time_anchor")] + [
        message.get("time_anchor") for turn in batch["turns"] for message in turn
    ]
    anchor = next((a for a in anchors if a), None)
    if anchor is not None:
        return parse_anchor(anchor)
    return FIRST_DATE if previous is None else previous + BATCH_SPACING


def load_chat(sample_id: str, chat: list[dict[str, Any]]) -> tuple[list[NewMessage], dict]:
    messages: list[NewMessage] = []
    sessions: dict[str, list[str]] = {}
    start: datetime | None = None
    for number, batch in enumerate(chat, start=1):
        start = batch_start(batch, start)
        ids = []
        for message in (m for turn in batch["turns"] for m in turn):
            role = message["role"]
            if role not in ("user", "assistant"):
                raise ValueError(f"{sample_id}: message {message.get('id')} has role {role!r}")
            content = str(message.get("content") or "")
            messages.append(
                NewMessage(
                    external_id=str(message["id"]),
                    role=role,
                    content=strip_marker(content) if role == "user" else content.strip(),
                    created_at=(start + len(ids) * TURN_SPACING).isoformat(),
                )
            )
            ids.append(str(message["id"]))
        sessions[f"session_{batch.get('batch_number', number)}"] = ids
    return messages, sessions


def load_questions(raw: dict[str, list[dict[str, Any]]]) -> list[Question]:
    questions = []
    for question_type, items in raw.items():
        for item in items:
            answer = next((item[f] for f in ANSWER_FIELDS if item.get(f) is not None), "")
            questions.append(
                Question(
                    question=str(item["question"]),
                    answer=str(answer),
                    category=question_type,
                    evidence=flatten_ids(item.get("source_chat_ids")),
                )
            )
    return questions


def conversation_dirs(path: Path) -> list[Path]:
    """The conversation folders under `path`, by size then number."""

    def key(folder: Path) -> tuple[int, int, str]:
        size, number = folder.parent.name, folder.name
        digits = re.sub(r"\D", "", size)
        return (int(digits) if digits else 0, int(number) if number.isdigit() else 0, str(folder))

    return sorted((chat.parent for chat in path.glob("*/*/chat.json")), key=key)


def load_conversations(path: Path, only: set[str] | None = None) -> list[Conversation]:
    """The conversations of a BEAM `chats/` folder (all, or those named `<size>/<n>`)."""
    conversations = []
    for folder in conversation_dirs(path):
        sample_id = f"{folder.parent.name}/{folder.name}"
        if only and sample_id not in only:
            continue
        chat = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        questions_file = folder / "probing_questions" / "probing_questions.json"
        raw = json.loads(questions_file.read_text(encoding="utf-8"))
        messages, sessions = load_chat(sample_id, chat)
        conversations.append(
            Conversation(
                sample_id=sample_id,
                speakers=("user", "assistant"),
                messages=messages,
                sessions=sessions,
                questions=load_questions(raw),
            )
        )
    return conversations


def is_abstention(question: Question) -> bool:
    return question.category == ABSTENTION


def is_answerable(question: Question) -> bool:
    return question.category != ABSTENTION


BEAM = Benchmark(
    name="BEAM",
    load=load_conversations,
    categories={name: name.replace("_", " ") for name in QUESTION_TYPES},
    answerable=is_answerable,
    abstains=is_abstention,
    grouping="question type",
)
