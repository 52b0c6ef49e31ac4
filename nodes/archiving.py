"""Embed and save: topic vectors of "summary + conversation log", then one transaction
for the topics and their messages' `topic_id`, then the vectors upserted.

Both steps are idempotent, so a run resumed after a crash between them (or a
re-run over the same data) creates no duplicate topic.
"""

from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.metrics import TOPICS_EXTRACTED, TOPICS_SIZE_CHARS
from graphs.state import MemoryState
from nodes.formatting import topic_embedding_text
from stores.records import TopicRow


def topic_metadata(topic: TopicRow) -> dict:
    return {
        "start_msg_id": topic["start_msg_id"],
        "end_msg_id": topic["end_msg_id"],
        "last_ts": topic["last_message_at"],
    }


def make_embed(deps: Deps):
    async def embed(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        by_id = {message["id"]: message for message in state["chunk"]}
        texts = [
            topic_embedding_text(draft["summary"], [by_id[i] for i in draft["message_ids"]])
            for draft in state["drafts"]
        ]
        vectors = await asyncio.to_thread(deps.embedder.encode, texts)
        return {"topic_vectors": vectors.tolist()}

    return embed


def make_save(deps: Deps):
    async def save(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        user_id = runtime.context.user_id
        drafts = state["drafts"]
        topics = await asyncio.to_thread(
            deps.store.save_topics,
            user_id,
            [(draft["summary"], draft["message_ids"]) for draft in drafts],
        )
        vector_of = {
            tuple(draft["message_ids"]): vector
            for draft, vector in zip(drafts, state["topic_vectors"], strict=True)
        }
        vectors = []
        for topic in topics:
            members = await asyncio.to_thread(deps.store.topic_messages, user_id, topic["id"])
            vector = vector_of.get(tuple(message["id"] for message in members))
            if vector is None:
                # Saved by an interrupted earlier attempt with other members: embed what it holds.
                text = topic_embedding_text(topic["summary"], members)
                vector = (await asyncio.to_thread(deps.embedder.encode, [text]))[0].tolist()
            vectors.append(vector)
        await asyncio.to_thread(
            deps.vectors.upsert,
            "topics",
            user_id,
            [topic["id"] for topic in topics],
            vectors,
            [topic_metadata(topic) for topic in topics],
        )
        TOPICS_EXTRACTED.inc(len(topics))
        for topic in topics:
            TOPICS_SIZE_CHARS.observe(topic["size_chars"])
        return {"saved_topic_ids": [topic["id"] for topic in topics]}

    return save
