"""Split: the Splitter agent proposes topics; without a model (or when it fails) the
graph takes the `segment` edge to the embedding-based splitter.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.state import MemoryState, TopicProposal
from nodes.formatting import clip, transcript
from nodes.segmentation import segment_conversation
from nodes.structured import ainvoke_json
from prompts import splitter as prompt

log = logging.getLogger(__name__)


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
        model = deps.models.get("splitter")
        if model is None:
            return Command(
                goto="segment", update={"split_fallback": "no splitter model configured"}
            )
        chunk = state["chunk"]
        facts = await asyncio.to_thread(deps.store.core_facts, runtime.context.user_id)
        messages = [
            SystemMessage(prompt.SYSTEM),
            HumanMessage(
                prompt.USER.format(
                    profile="\n".join(f"- {fact['content']}" for fact in facts) or "(nothing yet)",
                    first_id=chunk[0]["id"],
                    last_id=chunk[-1]["id"],
                    count=len(chunk),
                    conversation=transcript(chunk, with_ids=True),
                )
            ),
        ]
        try:
            output, _ = await ainvoke_json(model, messages, SplitterOutput)
        except Exception as error:  # any provider or parsing failure takes the fallback edge
            reason = f"splitter failed: {type(error).__name__}: {clip(str(error), 200)}"
            log.warning("user %s: %s", runtime.context.user_id, reason)
            return Command(goto="segment", update={"split_fallback": reason})
        proposals = [TopicProposal(**topic.model_dump()) for topic in output.topics]
        return Command(
            goto="validate",
            update={"proposals": proposals, "split_by": "llm", "split_fallback": None},
        )

    return split


def make_segment(deps: Deps):
    async def segment(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        chunk = state["chunk"]
        vectors = await asyncio.to_thread(
            deps.embedder.encode, [message["content"] for message in chunk]
        )
        proposals = await asyncio.to_thread(segment_conversation, chunk, vectors)
        return {"proposals": proposals, "split_by": "embeddings"}

    return segment
