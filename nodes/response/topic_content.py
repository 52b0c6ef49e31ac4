"""Full topic content for tool results and context assembly (seed 001's tool-result format).

`render_topics_content` is the single renderer; `get_topics_content` is the tool the
reranker is forced to call first and the responder may call in its tool loop. The tool
takes the user id from its `ToolRuntime` (the run's `ResponseContext`), never from the
model's arguments, so a model can only ever read the current user's topics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Annotated

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import Field

from core.context import ResponseContext
from core.deps import Deps
from core.ports import Store
from core.records import TopicRow, parse_timestamp
from core.text import neutralize, transcript
from nodes.shared.documents import with_documents

TOOL_NAME = "get_topics_content"
TOOL_DESCRIPTION = (
    "Load the full content of topics to study them in detail. Mind the size: load large "
    "topics (>10K chars) only if the subject is very relevant."
)
IDS_DESCRIPTION = "IDs of the topics to load, the most promising first."
NOTHING_FOUND = "No content is available for the requested topic IDs."
# A model asking for every candidate must not blow its own context window: ~50K tokens
# covers the seed's typical request of 10-15 topics (~25K tokens) with room to spare.
TOOL_RESULT_MAX_CHARS = 200_000


def size_label(size_chars: int) -> str:
    """`~16K chars` / `~800 chars`: the rough weight shown to the model before it loads."""
    if size_chars < 1000:
        return f"~{size_chars} chars"
    return f"~{round(size_chars / 1000)}K chars"


def topic_date(topic: TopicRow) -> str:
    return parse_timestamp(topic["first_message_at"]).date().isoformat()


def topic_header(topic: TopicRow) -> str:
    return (
        f"=== Topic {topic['id']} ===\n"
        f"Date: {topic_date(topic)} | {topic['message_count']} msgs | "
        f"{size_label(topic['size_chars'])}\n"
        f"Topic: {neutralize(topic['summary'])}"
    )


def excerpt_header(topic: TopicRow) -> str:
    """The header of a topic shown in part: its id and date, marked as an excerpt.

    The summary and size come with the whole topic (`topic_header`), which the model can
    load by id. Under a budget the room goes to the messages that answer (what a longer
    header costs is in docs/architecture.md). The evaluation fills its budget with this
    same header."""
    return f"=== Topic {topic['id']} (excerpt) ===\nDate: {topic_date(topic)}"


def omitted_note(count: int) -> str:
    return f"[… {count} more message{'' if count == 1 else 's'} not shown: size limit]"


def fit_block(header: str, entries: Sequence[str], room: int) -> str | None:
    """The header and as many whole entries as fit in `room` characters, with a note on
    what was left out; None when not even the header and the note fit."""
    budget = room - len(header) - 2 - len(omitted_note(len(entries))) - 1
    if budget < 0:
        return None
    kept: list[str] = []
    used = 0
    for entry in entries:
        if used + len(entry) + 1 > budget:
            break
        kept.append(entry)
        used += len(entry) + 1
    return "\n".join([header, "", *kept, omitted_note(len(entries) - len(kept))])


def render_topics_content(
    store: Store,
    user_id: int,
    topic_ids: Sequence[int],
    excerpts: Mapping[int, str] | None = None,
    max_chars: int | None = None,
) -> str:
    """The user's topics among `topic_ids`, in that order, as seed 001's tool result.

    Ids of other users' topics (and unknown ids) are skipped without a trace. A topic
    with an entry in `excerpts` is rendered with that excerpt instead of its messages,
    under `excerpt_header`. `max_chars` is a hard cap: the topic that crosses it is cut at
    a message boundary (with a note saying so) and the topics after it are left out.
    """
    topics = store.topics.by_ids(user_id, list(dict.fromkeys(topic_ids)))
    if not topics:
        return NOTHING_FOUND
    excerpts = excerpts or {}
    blocks: list[str] = []
    used = 0
    for topic in topics:
        if topic["id"] in excerpts:
            header = excerpt_header(topic)
            entries = [neutralize(excerpts[topic["id"]], keep_labels=True)]
        else:
            header = topic_header(topic)
            messages = with_documents(store, user_id, store.messages.of_topic(user_id, topic["id"]))
            entries = [transcript([message], day=topic_date(topic)) for message in messages]
        block: str | None = "\n".join([header, "", *entries])
        separator = 2 if blocks else 0
        if max_chars is not None and used + separator + len(block) > max_chars:
            block = fit_block(header, entries, max_chars - used - separator)
            if block is not None:
                blocks.append(block)
            break
        blocks.append(block)
        used += separator + len(block)
    return "\n\n".join(blocks)


def make_get_topics_content_tool(deps: Deps) -> BaseTool:
    """The `get_topics_content(ids)` tool over `deps.store`, scoped to the run's user."""

    def load(ids: Sequence[int], runtime: ToolRuntime[ResponseContext]) -> str:
        return render_topics_content(
            deps.store, runtime.context.user_id, ids, max_chars=TOOL_RESULT_MAX_CHARS
        )

    def get_topics_content(
        ids: Annotated[list[int], Field(description=IDS_DESCRIPTION)],
        runtime: ToolRuntime[ResponseContext],
    ) -> str:
        return load(ids, runtime)

    async def aget_topics_content(
        ids: Annotated[list[int], Field(description=IDS_DESCRIPTION)],
        runtime: ToolRuntime[ResponseContext],
    ) -> str:
        return await asyncio.to_thread(load, ids, runtime)

    return StructuredTool.from_function(
        func=get_topics_content,
        coroutine=aget_topics_content,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
    )


def person_description(circle: str | None, aliases: Sequence[str], bio: str | None) -> str:
    parts = [circle or "", f"aka {', '.join(aliases)}" if aliases else "", bio or ""]
    return "; ".join(part for part in parts if part)
