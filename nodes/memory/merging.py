"""Merge: consolidate topics that are one conversation split apart (seed 000).

Candidates come from the vector index (same user, not itself, similarity at least the
threshold). `merge` has the Merger agent judge each pair from the topics' messages;
without a model, or once it fails, the graph takes the `merge_by_rule` edge and the
similarity rule decides the pairs still to judge. Both walk the same loop: each topic
waiting for consolidation is marked checked as soon as it is done, so the rule picks up
exactly where the agent stopped. A merge that would pass `max_merged_size_chars` is
never made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel

from core.context import MemoryContext
from core.deps import Deps
from core.fallbacks import AgentFallback, MergeFallback
from core.metrics import CONSOLIDATION_CANDIDATES, TOPICS_MERGED
from core.records import TopicRow
from core.state import MemoryState, MergeRecord, Repair
from core.text import clip, neutralize, short_time, transcript
from nodes.shared.agent import call_agent_json, repairs_of
from prompts import merger as prompt

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


@dataclass(frozen=True)
class Verdict:
    merge: bool
    reason: str
    summary: str
    decided_by: Literal["llm", "rule"]
    repairs: tuple[Repair, ...] = ()
    """What was set right in the Merger's reply."""


Judge = Callable[[int, TopicRow, TopicRow, float], Awaitable["Verdict | AgentFallback"]]


async def rule_verdict(
    _user_id: int, first: TopicRow, second: TopicRow, similarity: float
) -> Verdict:
    """The similarity rule: a pair over the threshold is one conversation."""
    return Verdict(
        True,
        f"similarity {similarity:.2f} over threshold",
        combined_summary(first["summary"], second["summary"]),
        "rule",
    )


def make_merger_judge(deps: Deps) -> Judge:
    store = deps.store

    async def judge(
        user_id: int, first: TopicRow, second: TopicRow, similarity: float
    ) -> Verdict | AgentFallback:
        first_messages = await asyncio.to_thread(store.messages.of_topic, user_id, first["id"])
        second_messages = await asyncio.to_thread(store.messages.of_topic, user_id, second["id"])
        request = [
            SystemMessage(prompt.SYSTEM),
            HumanMessage(
                prompt.USER.format(
                    first_id=first["id"],
                    first_date=short_time(first["first_message_at"]),
                    first_summary=neutralize(first["summary"]),
                    first_messages=clip(transcript(first_messages), MESSAGES_CHARS_PER_TOPIC),
                    second_id=second["id"],
                    second_date=short_time(second["first_message_at"]),
                    second_summary=neutralize(second["summary"]),
                    second_messages=clip(transcript(second_messages), MESSAGES_CHARS_PER_TOPIC),
                )
            ),
        ]
        result = await call_agent_json(
            deps.models, "merger", request, MergerDecision, user_id=user_id
        )
        if isinstance(result, AgentFallback):
            return result
        decision = result.value
        summary = decision.merged_summary.strip() or combined_summary(
            first["summary"], second["summary"]
        )
        repairs = tuple(repairs_of("merger", result))
        return Verdict(decision.should_merge, decision.reason, summary, "llm", repairs)

    return judge


async def consolidate(
    deps: Deps, context: MemoryContext, judge: Judge, merges: list[MergeRecord]
) -> AgentFallback | None:
    """Merge the user's topics waiting for consolidation, as `judge` decides; merges made
    are appended to `merges`. Stops at the judge's first fallback and returns it.

    Topics are read `consolidation_batch_size` at a time until none waits: a chunk of
    several sittings can save more topics than one batch, and each topic read is either
    marked checked or merged away, so every batch makes progress."""
    gone: set[int] = set()
    while pending := await asyncio.to_thread(
        deps.store.topics.to_consolidate, context.user_id, context.consolidation_batch_size
    ):
        fallback = await consolidate_batch(deps, context, judge, merges, pending, gone)
        if fallback is not None:
            return fallback
    return None


async def consolidate_batch(
    deps: Deps,
    context: MemoryContext,
    judge: Judge,
    merges: list[MergeRecord],
    pending: list[TopicRow],
    gone: set[int],
) -> AgentFallback | None:
    store, vectors, user_id = deps.store, deps.vectors, context.user_id
    for topic in pending:
        if topic["id"] in gone:
            continue
        own = await asyncio.to_thread(vectors.vectors, "topics", user_id, [topic["id"]])
        nearest = (
            await asyncio.to_thread(
                vectors.query, "topics", user_id, own[topic["id"]], CANDIDATES_PER_TOPIC + 1
            )
            if topic["id"] in own
            else []
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
            found = await asyncio.to_thread(store.topics.by_ids, user_id, [other_id])
            if not found:
                continue
            other = found[0]
            if topic["size_chars"] + other["size_chars"] > context.max_merged_size_chars:
                continue
            target, source = sorted((topic, other), key=lambda t: t["start_msg_id"])
            verdict = await judge(user_id, target, source, similarity)
            if isinstance(verdict, AgentFallback):
                return verdict
            if not verdict.merge:
                continue
            await asyncio.to_thread(
                store.topics.merge, user_id, source["id"], target["id"], verdict.summary
            )
            # Re-embeds the target and drops the merged-away source from the index.
            await asyncio.to_thread(deps.indexer.index, user_id, "topics")
            gone.add(source["id"])
            TOPICS_MERGED.inc()
            merges.append(
                MergeRecord(
                    source_id=source["id"],
                    target_id=target["id"],
                    similarity=round(similarity, 4),
                    reason=verdict.reason,
                    decided_by=verdict.decided_by,
                )
            )
            break
        if topic["id"] not in gone:
            await asyncio.to_thread(store.topics.mark_consolidation_checked, user_id, [topic["id"]])
    return None


def recording_repairs(judge: Judge, repairs: list[Repair]) -> Judge:
    """`judge`, adding to `repairs` what was set right in each reply it reads."""

    async def judged(
        user_id: int, first: TopicRow, second: TopicRow, similarity: float
    ) -> Verdict | AgentFallback:
        verdict = await judge(user_id, first, second, similarity)
        if isinstance(verdict, Verdict):
            repairs.extend(verdict.repairs)
        return verdict

    return judged


def make_merge(deps: Deps):
    judge = make_merger_judge(deps)

    async def merge(
        state: MemoryState, runtime: Runtime[MemoryContext]
    ) -> Command[Literal["extract_facts", "merge_by_rule"]]:
        merges: list[MergeRecord] = []
        repairs: list[Repair] = []
        if deps.models.get("merger") is None:
            fallback: AgentFallback | None = AgentFallback("no_model")
        else:
            recorded = recording_repairs(judge, repairs)
            fallback = await consolidate(deps, runtime.context, recorded, merges)
        reason: MergeFallback | None = fallback.reason if fallback else None
        update = {"merges": merges, "merge_fallback": reason, "repairs": repairs}
        return Command(goto="merge_by_rule" if fallback else "extract_facts", update=update)

    return merge


def make_merge_by_rule(deps: Deps):
    async def merge_by_rule(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        merges = list(state.get("merges") or [])
        await consolidate(deps, runtime.context, rule_verdict, merges)
        return {"merges": merges}

    return merge_by_rule
