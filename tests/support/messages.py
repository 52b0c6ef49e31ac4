"""Messages as the tests write them: `NewMessage` rows to store, `MessageRow`s as stored."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from core.records import MessageRow, NewMessage, Role

BASE_TIME = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
USER = 1
"""The user whose memory a test reads (`message_row`'s rows are this user's)."""
OTHER = 2
"""Another user, whose memory must never show in `USER`'s."""


def new_messages(
    contents: Sequence[str | tuple[Role, str]],
    *,
    start: datetime = BASE_TIME,
    step: timedelta = timedelta(minutes=1),
    prefix: str = "m",
    gaps: dict[int, timedelta] | None = None,
) -> list[NewMessage]:
    """NewMessage rows `m1, m2, …` one `step` apart; roles alternate user/assistant.

    An item may be `(role, content)` to set its role; `gaps[i]` adds extra time
    before the i-th message (0-based).
    """
    messages: list[NewMessage] = []
    moment = start
    for index, item in enumerate(contents):
        if index:
            moment += step
        moment += (gaps or {}).get(index, timedelta(0))
        role, content = (
            item if isinstance(item, tuple) else (("user", "assistant")[index % 2], item)
        )
        messages.append(
            NewMessage(
                external_id=f"{prefix}{index + 1}",
                role=role,
                content=content,
                created_at=moment.isoformat(),
                author="Alexei" if role == "user" else "Topica",
            )
        )
    return messages


def message_row(
    message_id: int, position: int, content: str, ts: float, **fields: Any
) -> MessageRow:
    """A stored, unarchived message of user 1: the `position`-th of its conversation
    (0-based: `seq` is one more, and roles alternate user/assistant from a user message).
    `fields` overrides any other column (`role`, `external_id`, …)."""
    return MessageRow(
        **{
            "id": message_id,
            "user_id": USER,
            "seq": position + 1,
            "external_id": f"m{message_id}",
            "role": "user" if position % 2 == 0 else "assistant",
            "author": None,
            "content": content,
            "created_at": "2026-03-02T09:00:00+00:00",
            "ts": ts,
            "topic_id": None,
            "segment": 0,
            "kind": "conversation",
            **fields,
        }
    )


def ids(rows: Sequence[MessageRow]) -> list[int]:
    """The ids of stored rows, in their order."""
    return [row["id"] for row in rows]
