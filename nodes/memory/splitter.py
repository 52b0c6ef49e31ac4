"""Split: the Splitter agent proposes topics; without a model (or when it fails) the
graph takes the `segment` edge to the embedding-based splitter.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from core.context import MemoryContext
from core.deps import Deps
from core.fallbacks import AgentFallback
from core.state import MemoryState, TopicProposal
from core.text import short_time, transcript
from nodes.memory.chunking import chunk_sittings
from nodes.memory.segmentation import segment_conversation
from nodes.shared.agent import call_agent_json, repairs_update
from prompts import splitter as prompt


class SplitterTopic(BaseModel):
    summary: str
    start_msg_id: int
    end_msg_id: int


class SplitterOutput(BaseModel):
    topics: list[SplitterTopic] = Field(min_length=1)
    stragglers: list[int] = Field(default_factory=list)


def make_split(deps: Deps):
    async def split(
        state: MemoryState, runtime: Runtime[MemoryContext]
    ) -> Command[Literal["validate", "segment"]]:
        user_id = runtime.context.user_id
        chunk = state["chunk"]
        facts = await asyncio.to_thread(deps.store.facts.core, user_id)
        pieces = chunk_sittings(chunk, runtime.context)
        conversation = "\n".join(
            prompt.SITTING.format(
                start=short_time(piece[0]["created_at"]),
                conversation=transcript(piece, with_ids=True),
            )
            for piece in pieces
        )
        request = [
            SystemMessage(prompt.SYSTEM),
            HumanMessage(
                prompt.USER.format(
                    profile="\n".join(f"- {fact['content']}" for fact in facts) or "(nothing yet)",
                    first_id=chunk[0]["id"],
                    last_id=chunk[-1]["id"],
                    count=len(chunk),
                    sittings=len(pieces),
                    conversation=conversation,
                )
            ),
        ]
        result = await call_agent_json(
            deps.models, "splitter", request, SplitterOutput, user_id=user_id
        )
        if isinstance(result, AgentFallback):
            return Command(goto="segment", update={"split_fallback": result.reason})
        proposals = [TopicProposal(**topic.model_dump()) for topic in result.value.topics]
        return Command(
            goto="validate",
            update={
                "proposals": proposals,
                "split_by": "llm",
                "split_fallback": None,
                **repairs_update("splitter", result),
            },
        )

    return split


def make_segment(deps: Deps):
    async def segment(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        """Sitting by sitting: a chunk holds as many as fit, and the non-LLM splitter's
        measures (the depth of a dip against all of the text's dips) belong to one. The
        messages' vectors come from the index, which every memory run brings up to date
        first, so a chunk is not embedded twice."""
        chunk = state["chunk"]
        user_id = runtime.context.user_id
        vectors = await asyncio.to_thread(deps.indexer.message_vectors, user_id, chunk)
        proposals = []
        start = 0
        for sitting in chunk_sittings(chunk, runtime.context):
            piece = vectors[start : start + len(sitting)]
            proposals += await asyncio.to_thread(segment_conversation, sitting, piece)
            start += len(sitting)
        return {"proposals": proposals, "split_by": "embeddings"}

    return segment
