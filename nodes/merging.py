"""Merge: consolidate topics that are one conversation split apart (seed 000).

Candidates come from the vector index (same user, not itself, similarity at
least the threshold); the Merger agent judges each pair from the topics'
messages, and without a model (or when it fails) the similarity rule decides.
A merge that would pass `max_merged_size_chars` is never made.
"""

from __future__ import annotations

import asyncio
import logging

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.metrics import CONSOLIDATION_CANDIDATES, TOPICS_MERGED
from graphs.state import MemoryState, MergeRecord
from nodes.formatting import clip, short_time, transcript
from nodes.indexing import index_records
from nodes.structured import ainvoke_json
from prompts import merger as prompt
from stores.records import TopicRow

log = logging.getLogger(__name__)

CANDIDATES_PER_TOPIC = 5
MESSAGES_CHARS_PER_TOPIC = 6000
MERGED_SUMMARY_CHARS = 400


class MergerDecision(BaseModel):
    should_merge: bool
    reason: str = ""
    merged_summary: str = ""


def combined_summary(first: str, second: str) -> str:
    """The rule's merged summary: both summaries, without repeating one inside the other."""
    if second.casefold() in first.casefold():
        return first
    if first.casefold() in second.casefold():
        return second
    return clip(f"{first} · {second}", MERGED_SUMMARY_CHARS)


def make_merge(deps: Deps):
    store, vectors = deps.store, deps.vectors

    async def judge(
        user_id: int, first: TopicRow, second: TopicRow, similarity: float
    ) -> tuple[bool, str, str, str]:
        """(should merge, reason, merged summary, who decided)."""
        rule_summary = combined_summary(first["summary"], second["summary"])
        model = deps.models.get("merger")
        if model is None:
            return True, f"similarity {similarity:.2f} over threshold", rule_summary, "rule"
        first_messages = await asyncio.to_thread(store.topic_messages, user_id, first["id"])
        second_messages = await asyncio.to_thread(store.topic_messages, user_id, second["id"])
        request = [
            SystemMessage(prompt.SYSTEM),
            HumanMessage(
                prompt.USER.format(
                    first_id=first["id"],
                    first_date=short_time(first["first_message_at"]),
                    first_summary=first["summary"],
                    first_messages=clip(transcript(first_messages), MESSAGES_CHARS_PER_TOPIC),
                    second_id=second["id"],
                    second_date=short_time(second["first_message_at"]),
                    second_summary=second["summary"],
                    second_messages=clip(transcript(second_messages), MESSAGES_CHARS_PER_TOPIC),
                )
            ),
        ]
        try:
            decision, _ = await ainvoke_json(model, request, MergerDecision)
        except Exception as error:  # the rule stands in for a failed model
            reason = f"merger failed ({type(error).__name__}); similarity {similarity:.2f}"
            log.warning("user %s: %s", user_id, reason)
            return True, reason, rule_summary, "rule"
        summary = decision.merged_summary.strip() or rule_summary
        return decision.should_merge, decision.reason, summary, "llm"

    async def merge(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        context = runtime.context
        user_id = context.user_id
        pending = await asyncio.to_thread(
            store.topics_to_consolidate, user_id, context.consolidation_batch_size
        )
        merges: list[MergeRecord] = []
        gone: set[int] = set()
        for topic in pending:
            if topic["id"] in gone:
                continue
            own = await asyncio.to_thread(vectors.vectors, "topics", user_id, [topic["id"]])
            if topic["id"] not in own:
                continue
            nearest = await asyncio.to_thread(
                vectors.query, "topics", user_id, own[topic["id"]], CANDIDATES_PER_TOPIC + 1
            )
            candidates = [
                (other_id, similarity)
                for other_id, similarity in nearest
                if other_id != topic["id"]
                and other_id not in gone
                and similarity >= context.consolidation_similarity_threshold
            ]
            CONSOLIDATION_CANDIDATES.observe(len(candidates))
            for other_id, similarity in candidates:
                found = await asyncio.to_thread(store.topics_by_ids, user_id, [other_id])
                if not found:
                    continue
                other = found[0]
                if topic["size_chars"] + other["size_chars"] > context.max_merged_size_chars:
                    continue
                target, source = sorted((topic, other), key=lambda t: t["start_msg_id"])
                should, reason, summary, decided_by = await judge(
                    user_id, target, source, similarity
                )
                if not should:
                    continue
                merged = await asyncio.to_thread(
                    store.merge_topics, user_id, source["id"], target["id"], summary
                )
                # Re-embeds the target and drops the merged-away source from the index.
                await index_records(deps, user_id, "topics", [merged["id"], source["id"]])
                gone.add(source["id"])
                TOPICS_MERGED.inc()
                merges.append(
                    MergeRecord(
                        source_id=source["id"],
                        target_id=target["id"],
                        similarity=round(similarity, 4),
                        reason=reason,
                        decided_by=decided_by,
                    )
                )
                break
        checked = [topic["id"] for topic in pending if topic["id"] not in gone]
        await asyncio.to_thread(store.mark_consolidation_checked, user_id, checked)
        return {"merges": merges}

    return merge
