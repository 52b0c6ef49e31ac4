"""What the bot's media and edits become in memory, shared with any other
front end: documents kept as attachments in passages, voice and photos turned into text
by the media graph, and edited messages re-stored.

Documents are read within bounds by `app.reading` and split by langchain-text-splitters'
`RecursiveCharacterTextSplitter` at paragraph, line, sentence and word boundaries.
"""

from __future__ import annotations

import base64
import logging
from typing import Any, Literal

from langgraph.graph.state import CompiledStateGraph

from core.context import MediaContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.records import AttachmentRow, MessageRow
from core.state import MediaItem
from core.tracing import run_config, user_key
from graphs.media import build_media_graph

log = logging.getLogger(__name__)

PASSAGE_CHARS = 800
"""About a paragraph: the size the local sentence encoder embeds without losing the point
of a passage in its average, and a readable quote."""
PASSAGE_OVERLAP = 100
MEDIA_MIME_PREFIXES = ("audio/", "image/")
"""Attachments that hold a transcript or a description (not a document's text)."""
"""A sentence cut by a boundary is whole in one of the two passages."""


def split_passages(text: str) -> list[str]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        chunk_size=PASSAGE_CHARS, chunk_overlap=PASSAGE_OVERLAP
    )
    return [passage for passage in splitter.split_text(text) if passage.strip()]


def keep_document(
    deps: Deps,
    user_id: int,
    message_id: int,
    name: str,
    mime_type: str,
    text: str,
    *,
    index: bool = True,
) -> AttachmentRow | None:
    """Keep a document's text with its stored message, in passages: found by full text at
    once, by vectors once indexed (now with `index`, else by `index_passages` or the next
    indexing run; the vector queue holds them till then). None for a document without
    text."""
    passages = split_passages(text)
    if not passages:
        return None
    attachment = deps.store.attachments.add(user_id, message_id, name, mime_type, text, passages)
    if index:
        index_passages(deps, user_id)
    return attachment


def index_passages(deps: Deps, user_id: int) -> int:
    """Embed and index the user's queued passages; long documents make many passages,
    so this runs off the reply path."""
    try:
        return deps.indexer.index(user_id, "passages")
    except VectorStoreUnavailable as error:
        log.warning("user %s: document indexing postponed: %s", user_key(user_id), error)
        return 0


def edit_message(deps: Deps, user_id: int, external_id: str, text: str) -> MessageRow | None:
    """An edited message: its new text stored (the old kept in its history), indexed
    again, its topic marked for summarising again. None for a message never stored."""
    stored = deps.store.messages.by_external_id(user_id, external_id)
    if stored is None:
        return None
    media_texts = [
        attachment["content"]
        for attachment in deps.store.attachments.of_messages(user_id, [stored["id"]])
        if attachment["mime_type"].startswith(MEDIA_MIME_PREFIXES)
    ]
    # A caption edited: what the voice said or the photo showed stays with the message.
    text = " ".join([text, *media_texts])
    row = deps.store.messages.rewrite(user_id, stored["id"], text, edit=True)
    try:
        deps.indexer.index(user_id, "messages")
    except VectorStoreUnavailable as error:
        log.warning("user %s: edit indexing postponed: %s", user_key(user_id), error)
    return row


def media_item(
    message_id: int, kind: Literal["audio", "image"], name: str, mime_type: str, data: bytes,
    label: str,
) -> MediaItem:  # fmt: skip
    return MediaItem(
        message_id=message_id,
        kind=kind,
        name=name,
        mime_type=mime_type,
        base64=base64.b64encode(data).decode("ascii"),
        label=label,
    )


class MediaDigester:
    """The media graph, compiled once: a group's voice and photos turned into the text
    their messages store."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.graph: CompiledStateGraph = build_media_graph(deps).compile(name="media")

    async def digest(self, user_id: int, items: list[MediaItem]) -> dict[str, Any]:
        """The graph's final state: `texts` by message id, `saved`, the fallbacks."""
        if not items:
            return {"texts": {}, "saved": []}
        context = MediaContext.from_settings(self.deps.settings, user_id=user_id)
        return await self.graph.ainvoke(
            {"items": items}, run_config("media", user_id), context=context
        )
