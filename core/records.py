"""Row shapes that cross the store boundary.

They are plain TypedDicts so that graph state holding them stays JSON/msgpack
serialisable for the checkpointer. They carry no user id: every read is already
scoped to one user, and rows travel into traces and checkpoints, where users
appear only as a hash (core/tracing.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, NotRequired

from typing_extensions import TypedDict

ID_RANGE = range(-(2**63), 2**63)
"""Every id a store can hold (user, message, topic, fact, person): SQLite's signed
64-bit integers. A number outside it names nothing; it is an unknown id, refused
like any other (a model's invented id, a forged button, `--user 2**63`)."""

Role = Literal["user", "assistant"]
FactType = Literal["identity", "context", "status"]
MessageKind = Literal["conversation", "memory_only_answer", "command", "media_description", "task"]
"""What a stored message is. Only `conversation` becomes memory: it alone is archived into
topics, searched (full-text and message vectors), summarised and recalled by auto-RAG.
The others stay in the log, and the sliding window shows them: `memory_only_answer` (an
answer quoting memory, written with no model: memory about memory), `command` (control,
not conversation) and `media_description` (a label or description of a medium standing
in for it), `task` (a scheduled task's message; its external id is
`task:<task id>:<due time>`)."""
MESSAGE_KINDS: tuple[MessageKind, ...] = (
    "conversation",
    "memory_only_answer",
    "command",
    "media_description",
    "task",
)
MEMORY_KIND: MessageKind = "conversation"
"""The one kind that becomes memory."""


class NewMessage(TypedDict):
    """A message as it arrives (from a session file, the bot or the CLI)."""

    external_id: str
    role: Role
    content: str
    created_at: str
    author: NotRequired[str | None]
    kind: NotRequired[MessageKind]
    """`conversation` when absent."""


class MessageRow(TypedDict):
    id: int
    seq: int
    external_id: str
    role: Role
    author: str | None
    content: str
    created_at: str
    ts: float
    topic_id: int | None
    segment: int
    kind: MessageKind


class Member(NamedTuple):
    """What ranking a topic's messages needs of one of them (`MessageRepository.members_of`)."""

    id: int
    author: str | None
    role: Role
    seq: int
    ts: float

    @property
    def speaker(self) -> str:
        """Who wrote it: its author, else its role."""
        return self.author or self.role

    @classmethod
    def of(cls, row: MessageRow) -> Member:
        return cls(row["id"], row["author"], row["role"], row["seq"], row["ts"])


class TopicRow(TypedDict):
    id: int
    summary: str
    start_msg_id: int
    end_msg_id: int
    size_chars: int
    message_count: int
    first_message_at: str
    last_message_at: str
    facts_extracted: bool
    consolidation_checked: bool
    created_at: str


class FactRow(TypedDict):
    id: int
    type: FactType
    content: str
    importance: int
    topic_id: int | None
    created_at: str
    updated_at: str


class PersonRow(TypedDict):
    id: int
    name: str
    aliases: list[str]
    username: str | None
    circle: str | None
    bio: str | None
    created_at: str
    updated_at: str


class AttachmentRow(TypedDict):
    """A document kept with its message: the message stores only its label."""

    id: int
    message_id: int
    name: str
    mime_type: str
    content: str
    created_at: str


class PassageRow(TypedDict):
    """One passage of an attachment's text, indexed like a message (full text, vectors)."""

    id: int
    attachment_id: int
    message_id: int
    position: int
    content: str
    name: str


class MessageEditRow(TypedDict):
    """One edit of a stored message: its text before and after."""

    id: int
    message_id: int
    old_content: str
    new_content: str
    at: str


class SessionSummaryRow(TypedDict):
    """The rolling summary of a segment's messages first_seq..last_seq (seed 003)."""

    user_id: int
    segment: int
    first_seq: int
    last_seq: int
    summary: str
    written_by: Literal["llm", "extractive"]
    updated_at: str


AnsweredBy = Literal["responder", "synthesis", "memory"]


class AnswerRow(TypedDict):
    """What an assistant message (`message_id`) was answered from: seed 003's
    `context_used` (`core.state.ContextUsed` plus the tools called and the fallbacks
    taken), by whom, and whether the user stopped it while it was written."""

    message_id: int
    answered_by: AnsweredBy
    partial: bool
    context_used: dict[str, Any]
    created_at: str


REPLY_PREFIX = "reply-to-"
"""An answer's external id is this prefix and its question's row id: a resumed turn stores
it once, and a question with no such answer was never answered."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parse_timestamp(value: str) -> datetime:
    """ISO-8601 to an aware datetime; a naive time is taken as UTC."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
