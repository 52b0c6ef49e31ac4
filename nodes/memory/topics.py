"""Embed and save: topic vectors of "summary + conversation log", then one transaction
for the topics and their messages' `topic_id`, then the vectors upserted.

Both steps are idempotent, so a run resumed after a crash between them (or a
re-run over the same data) creates no duplicate topic.
"""

from __future__ import annotations

import asyncio

from langgraph.runtime import Runtime

from core.context import MemoryContext
from core.deps import Deps
from core.metrics import TOPICS_EXTRACTED, TOPICS_SIZE_CHARS
from core.state import MemoryState
from core.text import topic_embedding_text


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
            deps.store.topics.save,
            user_id,
            [(draft["summary"], draft["message_ids"]) for draft in drafts],
        )
        # A topic saved by an interrupted earlier attempt may hold other members than
        # this run's draft; the indexer embeds any topic without a matching vector.
        vector_of = {
            tuple(draft["message_ids"]): vector
            for draft, vector in zip(drafts, state["topic_vectors"], strict=True)
        }
        members = await asyncio.to_thread(
            deps.store.messages.external_ids_by_topic, user_id, [topic["id"] for topic in topics]
        )
        by_external = {message["external_id"]: message["id"] for message in state["chunk"]}
        vectors = {}
        for topic in topics:
            key = tuple(by_external.get(external) for external in members[topic["id"]])
            if key in vector_of:
                vectors[topic["id"]] = vector_of[key]
        await asyncio.to_thread(deps.indexer.index, user_id, "topics", vectors)
        TOPICS_EXTRACTED.inc(len(topics))
        for topic in topics:
            TOPICS_SIZE_CHARS.observe(topic["size_chars"])
        return {"saved_topic_ids": [topic["id"] for topic in topics]}

    return save
