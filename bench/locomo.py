"""LoCoMo conversations as Topica sessions.

Each LoCoMo conversation becomes one user's history: every session at its
date, both speakers as authors (role "user"; there is no assistant), the
dia_id as the message's external id. Turns of a session are a minute apart,
so a session is one sitting and sessions days apart are separate chunks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from core.records import NewMessage

TURN_SPACING = timedelta(minutes=1)
_DIA_ID = re.compile(r"^D\d+:\d+$")


@dataclass
class Question:
    question: str
    answer: str
    category: int
    evidence: list[str]
    malformed_evidence: list[str] = field(default_factory=list)


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    messages: list[NewMessage]
    sessions: dict[str, list[str]]
    """Session name ("session_3") → its dia_ids, for session-level baselines."""
    questions: list[Question]


def parse_session_time(value: str) -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def split_evidence(raw: list[Any]) -> tuple[list[str], list[str]]:
    """Valid dia_ids, and the entries that were malformed (split where possible)."""
    valid: list[str] = []
    malformed: list[str] = []
    for entry in raw or []:
        parts = [part.strip() for part in re.split(r"[;,\s]+", str(entry)) if part.strip()]
        if len(parts) != 1 or not _DIA_ID.match(parts[0]):
            malformed.append(str(entry))
        valid.extend(part for part in parts if _DIA_ID.match(part))
    return list(dict.fromkeys(valid)), malformed


def load_conversations(path: Path, only: set[str] | None = None) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for item in data:
        if only and item["sample_id"] not in only:
            continue
        conversation = item["conversation"]
        numbers = sorted(
            int(key.split("_")[1])
            for key in conversation
            if re.fullmatch(r"session_\d+", key) and conversation[key]
        )
        messages: list[NewMessage] = []
        sessions: dict[str, list[str]] = {}
        for number in numbers:
            start = parse_session_time(conversation[f"session_{number}_date_time"])
            ids = []
            for index, turn in enumerate(conversation[f"session_{number}"]):
                messages.append(
                    NewMessage(
                        external_id=turn["dia_id"],
                        role="user",
                        content=turn_text(turn),
                        created_at=(start + index * TURN_SPACING).isoformat(),
                        author=turn["speaker"],
                    )
                )
                ids.append(turn["dia_id"])
            sessions[f"session_{number}"] = ids
        questions = []
        for qa in item["qa"]:
            evidence, malformed = split_evidence(qa.get("evidence", []))
            questions.append(
                Question(
                    question=qa["question"],
                    answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                    category=int(qa["category"]),
                    evidence=evidence,
                    malformed_evidence=malformed,
                )
            )
        conversations.append(
            Conversation(
                sample_id=item["sample_id"],
                speakers=(conversation["speaker_a"], conversation["speaker_b"]),
                messages=messages,
                sessions=sessions,
                questions=questions,
            )
        )
    return conversations
