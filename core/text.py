"""How messages are rendered for prompts, tool results and embeddings."""

from __future__ import annotations

from collections.abc import Sequence

from core.records import MessageRow, PersonRow, parse_timestamp


def speaker(message: MessageRow) -> str:
    if message["role"] == "assistant":
        return "Assistant"
    return f"User ({message['author']})" if message.get("author") else "User"


def short_time(iso: str) -> str:
    return parse_timestamp(iso).strftime("%Y-%m-%d %H:%M")


def transcript(messages: Sequence[MessageRow], *, with_ids: bool = False) -> str:
    """`[User (Alexei) (2026-03-02 09:14)]: text` lines, optionally prefixed by `[id=N]`."""
    lines = []
    for message in messages:
        prefix = f"[id={message['id']}] " if with_ids else ""
        when = short_time(message["created_at"])
        lines.append(f"{prefix}[{speaker(message)} ({when})]: {message['content']}")
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
    return f"{prefix}{person['name']}{aliases}{circle}: {person['bio'] or ''}"
