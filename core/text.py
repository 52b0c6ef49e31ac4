"""How messages are rendered for prompts, tool results and embeddings."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from core.records import MessageRow, PersonRow, parse_timestamp

PROMPT_TAGS = frozenset(
    {
        "caption", "chunk", "conversation", "old_summary", "current_message", "date",
        "earlier_in_conversation",
        "facts", "instruction", "known_facts", "known_people", "memory", "messages",
        "new_messages", "now", "previous_runs", "task",
        "output", "people", "people_candidates", "previous_summary", "protocol", "query",
        "recalled_topics", "recent_messages", "rules", "session_summary", "sitting", "summary",
        "system", "topic", "topic_candidates", "tool", "user", "assistant", "user_profile",
    }
)  # fmt: skip
"""The section tags the prompts (`prompts/`) are built of, and the role names a model
might take for a tag; `tests/unit/test_neutralize.py` checks every prompt tag is here."""

_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028\u2029]")
_TAG = re.compile(r"<(\s*/?\s*)([A-Za-z_][\w.:-]*)([^<>\n]{0,200})>")
_LABEL_AT_LINE_START = re.compile(r"^([ \t]*)\[([^\[\]\n]{0,160})\](?=[ \t]*:)", re.MULTILINE)
_SPEAKER_LABEL = re.compile(
    r"\[((?:User|Assistant|System|Tool)\b[^\[\]\n]{0,160})\](?=[ \t]*:)", re.IGNORECASE
)
_ID_MARK = re.compile(r"\[(\s*(?:ID\s*:|P\s*:|id\s*=)\s*\d+\s*)\]", re.IGNORECASE)
_HEADER_AT_LINE_START = re.compile(r"^([ \t]*)={3,}", re.MULTILINE)
_ANY_TRIGGER = re.compile(r"[\r\v\f\x1c-\x1e\x85\u2028\u2029<\[]|===")
"""What one of the patterns above needs to match at all: a line break of `_LINE_BREAKS`,
the `<` of a tag, the `[` of a label or id marker, or a header's `===`. Text without any
is returned as it is, without running them."""


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def valid_text(text: str) -> str:
    """Text every encoder and store takes alike (UTF-8, JSON, SQLite, PostgreSQL): each
    lone UTF-16 surrogate (which UTF-8 cannot encode) and each NUL (which PostgreSQL's
    text refuses) becomes U+FFFD. For text from outside: a model's reply, as a broken
    provider may escape it, and whatever a store is given to keep."""
    if text.isascii() and "\x00" not in text:
        return text
    return _UNSTORABLE.sub("\ufffd", text)


def valid_value(value: Any) -> Any:
    """`value` with `valid_text` applied to every string in it (keys of mappings too), and
    every NaN or infinity (which JSON, SQLite's `json_valid` and PostgreSQL's `jsonb`
    refuse) made None."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {valid_value(key): valid_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [valid_value(item) for item in value]
    return value


def _tag(match: re.Match[str]) -> str:
    if match.group(2).lower() not in PROMPT_TAGS:
        return match.group(0)
    return f"‹{match.group(1)}{match.group(2)}{match.group(3)}›"


def neutralize(text: str, *, keep_labels: bool = False) -> str:
    """Data as it may enter a prompt: nothing in it can pass for the prompt's structure.

    Stored text (messages, summaries, facts, people, excerpts, the model's reasons) is
    pasted into system messages and tool results; without this, a message holding
    `</recalled_topics><instruction>…</instruction>` would close its section and open the
    app's own. The prompt's section tags become `‹…›`; transcript labels such as
    `[User (Admin) (…)]:` at a line's start (every line break counts, `\u2028` too) or
    naming a speaker anywhere, and id markers (`[ID:5]`, `[P:7]`, `[id=3]`) lose their
    square brackets; a line starting with `===` (a topic header) starts with `≡≡≡`.
    `keep_labels` leaves transcript labels alone (an excerpt the reranker copied from
    transcript lines, whose own labels are the app's, and forged ones arrive neutralised).
    Text without such things is returned unchanged."""
    if not text or not _ANY_TRIGGER.search(text):
        return text
    return substitute_all(text, keep_labels=keep_labels)


def substitute_all(text: str, *, keep_labels: bool = False) -> str:
    """`neutralize`'s substitutions, all run whatever the text holds."""
    text = _LINE_BREAKS.sub("\n", text)
    text = _TAG.sub(_tag, text)
    if not keep_labels:
        text = _LABEL_AT_LINE_START.sub(r"\1(\2)", text)
        text = _SPEAKER_LABEL.sub(r"(\1)", text)
    text = _ID_MARK.sub(r"(\1)", text)
    return _HEADER_AT_LINE_START.sub(
        lambda m: m.group(1) + "≡" * (len(m.group(0)) - len(m.group(1))), text
    )


def speaker(message: MessageRow) -> str:
    if message["role"] == "assistant":
        return "Assistant"
    name = author_name(message)
    return f"User ({name})" if name else "User"


def author_name(message: MessageRow) -> str | None:
    """The message's author as one line with no square brackets (it cannot close a label
    it sits in), `neutralize`d; None when the message has none."""
    if not message.get("author"):
        return None
    name = " ".join(message["author"].split()).replace("[", "(").replace("]", ")")
    return neutralize(name)


def short_time(iso: str) -> str:
    return parse_timestamp(iso).strftime("%Y-%m-%d %H:%M")


def time_under(iso: str, day: str | None) -> str:
    """`short_time` under a header that gives the date `day` (`YYYY-MM-DD`; None: none
    does): the time alone on that day, the date and time on another."""
    when = short_time(iso)
    return when[len(day) + 1 :] if day is not None and when.startswith(f"{day} ") else when


def transcript(
    messages: Sequence[MessageRow], *, with_ids: bool = False, day: str | None = None
) -> str:
    """`[User (Alexei) (2026-03-02 09:14)]: text` lines, optionally prefixed by `[id=N]`;
    the text (and author) `neutralize`d, so a message cannot forge another line or tag.
    Under a header that gives the date (`day`, `YYYY-MM-DD`: a topic block's), a message
    written that day shows its time alone, `[User (Alexei) (09:14)]`, and one written
    on another day its date too."""
    lines = []
    for message in messages:
        prefix = f"[id={message['id']}] " if with_ids else ""
        when = time_under(message["created_at"], day)
        lines.append(f"{prefix}[{speaker(message)} ({when})]: {neutralize(message['content'])}")
    return "\n".join(lines)


def conversation_log(messages: Sequence[MessageRow]) -> str:
    """The seed's log format for embeddings: `[User]: ...`, `[Assistant]: ...`."""
    return "\n".join(f"[{speaker(message)}]: {message['content']}" for message in messages)


def topic_embedding_text(summary: str, messages: Sequence[MessageRow]) -> str:
    return f"Topic Summary: {summary}\n\nConversation Log:\n{conversation_log(messages)}"


def clip(text: str, limit: int) -> str:
    """`text` cut at a word boundary to at most `limit` characters, marked with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(",.;:-— ") + "…"


def person_text(person: PersonRow, *, with_id: bool = False) -> str:
    """`[7] Masha aka Маша (family): bio`: a person as prompts show and embeddings read them."""
    prefix = f"[{person['id']}] " if with_id else ""
    aliases = f" aka {', '.join(person['aliases'])}" if person["aliases"] else ""
    circle = f" ({person['circle']})" if person["circle"] else ""
    return prefix + neutralize(f"{person['name']}{aliases}{circle}: {person['bio'] or ''}")
