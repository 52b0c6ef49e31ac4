"""Resummarise: topics whose messages changed since they were summarised (an edit, a
transcript) get a summary written again, and their vector with it, before the run takes
a new chunk. The Splitter agent writes it; without a model, or when it fails, the graph
takes the `resummarise_extractive` edge: the extractive summary of the embedding
segmentation (the opener and the most central user message).

As the run's first node it starts the run's `repairs` over (a per-user thread runs chunk
after chunk).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from core.context import MemoryContext
from core.deps import Deps
from core.errors import VectorStoreUnavailable
from core.fallbacks import AgentFallback
from core.records import TopicRow
from core.state import MemoryState, Repair
from core.text import clip, neutralize, transcript
from nodes.memory.segmentation import SegmentationParams, extractive_summary
from nodes.shared.agent import call_agent, repairs_of
from prompts import splitter as prompt

CONVERSATION_CHARS = 20_000


def reindex_topics(deps: Deps, user_id: int) -> None:
    # A vector store that is down: the queue keeps them, archive_user indexes at the end.
    with contextlib.suppress(VectorStoreUnavailable):
        deps.indexer.index(user_id, "topics")


def make_resummarise(deps: Deps):
    async def resummarise(
        state: MemoryState, runtime: Runtime[MemoryContext]
    ) -> Command[Literal["load_chunk", "resummarise_extractive"]]:
        user_id = runtime.context.user_id
        stale: list[TopicRow] = await asyncio.to_thread(deps.store.topics.stale, user_id)
        done: list[int] = []
        repairs: list[Repair] = []
        for topic in stale:
            messages = await asyncio.to_thread(deps.store.messages.of_topic, user_id, topic["id"])
            request = [
                SystemMessage(prompt.RESUMMARISE),
                HumanMessage(
                    prompt.RESUMMARISE_USER.format(
                        summary=neutralize(topic["summary"]),
                        count=len(messages),
                        conversation=clip(transcript(messages), CONVERSATION_CHARS),
                    )
                ),
            ]
            result = await call_agent(deps.models, "splitter", request, user_id=user_id)
            if isinstance(result, AgentFallback):
                return Command(
                    goto="resummarise_extractive",
                    update={
                        "resummarised": done,
                        "resummary_fallback": result.reason,
                        "repairs": Overwrite(repairs),
                    },
                )
            repairs.extend(repairs_of("splitter", result))
            await asyncio.to_thread(
                deps.store.topics.resummarise, user_id, topic["id"], result.value
            )
            done.append(topic["id"])
        if done:
            await asyncio.to_thread(reindex_topics, deps, user_id)
        update = {"resummarised": done, "resummary_fallback": None, "repairs": Overwrite(repairs)}
        return Command(goto="load_chunk", update=update)

    return resummarise


def make_resummarise_extractive(deps: Deps):
    def summarise_all(user_id: int) -> list[int]:
        done = []
        for topic in deps.store.topics.stale(user_id):
            messages = deps.store.messages.of_topic(user_id, topic["id"])
            if not messages:
                continue
            vectors = deps.embedder.encode([message["content"] for message in messages])
            summary = extractive_summary(messages, vectors, SegmentationParams())
            deps.store.topics.resummarise(user_id, topic["id"], summary)
            done.append(topic["id"])
        reindex_topics(deps, user_id)
        return done

    async def resummarise_extractive(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        done = await asyncio.to_thread(summarise_all, runtime.context.user_id)
        return {"resummarised": [*(state.get("resummarised") or []), *done]}

    return resummarise_extractive
