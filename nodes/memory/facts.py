"""Extract facts: the Archivist agent turns finished topics into fact and people updates.

search (known facts and people) → extract (the model, validated actions) → apply (the
fact-action service in `nodes.shared.fact_actions`, then the vectors). One call reads as
many finished topics as fit in `CONVERSATION_CHARS`; each fact names the topic that
states it (left out: a guess, `source_topic`), and forgetting a topic forgets the facts
filed under it. The commitments the reply names (the user's promises and plans with a
time) become reminder offers in the same transaction (`nodes.memory.commitments`).
Facts are never invented: without a model, or when the model fails on a batch, the graph
takes the `defer_facts` edge with the reason, and the topics it could not read stay
marked "facts not extracted", so a later run with a working model catches up.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import BaseModel, Field

from core.context import MemoryContext
from core.deps import Deps
from core.errors import StoreError
from core.fallbacks import AgentFallback
from core.ports import Store
from core.records import FactRow, FactType, PersonRow, TopicRow
from core.state import FactsReport, MemoryState, Repair
from core.text import clip, neutralize, person_text, short_time, transcript
from core.tracing import user_key
from nodes.memory.commitments import Commitment, offer_commitments
from nodes.shared.agent import call_agent_json, repairs_of
from nodes.shared.documents import with_documents
from nodes.shared.fact_actions import (
    FactChange,
    IncompleteFactAction,
    apply_fact_change,
    index_memory,
)
from nodes.shared.tasks import user_timezone
from prompts import archivist as prompt

log = logging.getLogger(__name__)

WORD = re.compile(r"\w{3,}")
CONVERSATION_CHARS = 24_000
"""The conversations one Archivist call reads, together (a longer topic is clipped to it)."""

Batch = list[tuple[TopicRow, str]]
"""Topics with their transcripts, read by one Archivist call."""


class FactAction(BaseModel):
    action: Literal["add", "update", "delete"]
    id: int | None = None
    type: FactType = "context"
    content: str = ""
    importance: int = Field(default=50, ge=0, le=100)
    reason: str | None = None
    topic_id: int | None = None
    """The conversation that states it (may be left out when the call read one topic)."""


class PersonAction(BaseModel):
    action: Literal["add", "update", "merge"]
    id: int | None = None
    merge_into: int | None = None
    name: str = ""
    aliases: list[str] = Field(default_factory=list)
    username: str | None = None
    circle: str | None = None
    bio: str | None = None


class ArchivistOutput(BaseModel):
    facts: list[FactAction] = Field(default_factory=list)
    people: list[PersonAction] = Field(default_factory=list)
    commitments: list[Commitment] = Field(default_factory=list)


def fact_text(fact: FactRow) -> str:
    return f"[{fact['id']}] ({fact['type']}, {fact['importance']}) {neutralize(fact['content'])}"


def source_topic(batch: Batch, action: FactAction) -> int:
    """The topic a fact action comes from: the one it names, if the call read it; else the
    call's only topic; else the one whose conversation shares most words with the fact
    (the first on a tie), so a model that leaves `topic_id` out loses no fact."""
    topic_ids = [topic["id"] for topic, _ in batch]
    if action.topic_id in topic_ids:
        return action.topic_id
    if len(batch) == 1:
        return topic_ids[0]
    words = set(WORD.findall(action.content.casefold()))
    shared = [len(words & set(WORD.findall(text.casefold()))) for _, text in batch]
    return topic_ids[shared.index(max(shared))]


def batched(texts: Batch, limit: int = CONVERSATION_CHARS) -> list[Batch]:
    """Consecutive topics (with their transcripts) in batches of at most `limit`
    characters of conversation; a topic is never split, and never left out."""
    batches: list[Batch] = []
    size = 0
    for topic, text in texts:
        if not batches or size + len(text) > limit:
            batches.append([])
            size = 0
        batches[-1].append((topic, text))
        size += len(text)
    return batches


def read_batches(store: Store, user_id: int, topics: list[TopicRow]) -> list[Batch]:
    """Each topic's conversation as the Archivist reads it (with the documents its
    messages carried), in batches for one call."""
    texts = []
    for topic in topics:
        messages = with_documents(store, user_id, store.messages.of_topic(user_id, topic["id"]))
        text = transcript(messages, with_ids=True)
        texts.append((topic, clip(text, CONVERSATION_CHARS)))
    return batched(texts)


def archivist_request(
    facts: list[FactRow], people: list[PersonRow], batch: Batch
) -> list[BaseMessage]:
    """The Archivist's prompt: what is known, then the batch's conversations."""
    conversations = "\n\n".join(
        prompt.CONVERSATION.format(
            topic_id=topic["id"], date=short_time(topic["first_message_at"]), conversation=text
        )
        for topic, text in batch
    )
    known_people = "\n".join(person_text(person, with_id=True) for person in people)
    return [
        SystemMessage(prompt.SYSTEM),
        HumanMessage(
            prompt.USER.format(
                facts="\n".join(map(fact_text, facts)) or "(none)",
                people=known_people or "(none)",
                conversations=conversations,
            )
        ),
    ]


def apply_fact(
    store: Store, user_id: int, batch: Batch, action: FactAction, known: set[str]
) -> str | None:
    """Apply one fact action (an add the user's facts already hold is skipped); returns
    the report counter it adds to, if any."""
    if action.action == "add" and action.content.strip().casefold() in known:
        return None
    shared = action.model_dump(include={"action", "content", "importance", "reason"})
    change = FactChange(
        **shared, fact_id=action.id, fact_type=action.type, topic_id=source_topic(batch, action)
    )
    try:
        fact = apply_fact_change(store, user_id, change)
    except IncompleteFactAction:
        return None
    if action.action == "add":
        known.add(fact["content"].casefold())
    return {"add": "added", "update": "updated", "delete": "deleted"}[action.action]


def apply_person(store: Store, user_id: int, action: PersonAction) -> str | None:
    details = action.model_dump(include={"aliases", "username", "circle", "bio"})
    if action.action == "add" and action.name.strip():
        store.people.add(user_id, action.name, **details)
        return "people_added"
    if action.id is None:
        return None
    if action.action == "update":
        store.people.update(user_id, action.id, name=action.name or None, **details)
        return "people_updated"
    if action.merge_into:
        store.people.merge(user_id, action.id, action.merge_into)
        return "people_merged"
    return None


@dataclass(frozen=True)
class Clock:
    """When the reply is applied and the user's time zone: commitments are offered only
    for times still ahead."""

    now: datetime
    timezone: str


def apply_output(
    store: Store,
    user_id: int,
    batch: Batch,
    output: ArchivistOutput,
    report: FactsReport,
    clock: Clock,
) -> None:
    """The reply's actions, its commitments' reminder offers and its topics'
    facts_extracted flags, in one transaction; refused actions (other users' ids, bad
    values) are logged and skipped."""
    with store.atomic():
        known = {fact["content"].casefold() for fact in store.facts.all_of(user_id)}
        appliers = (
            (lambda action: apply_fact(store, user_id, batch, action, known), output.facts),
            (lambda action: apply_person(store, user_id, action), output.people),
        )
        for apply_one, actions in appliers:
            for action in actions:
                try:
                    counter = apply_one(action)
                except StoreError as error:
                    log.warning("user %s: archivist action refused: %s", user_key(user_id), error)
                    continue
                if counter:
                    report[counter] += 1
        topics = [topic for topic, _ in batch]
        offer_commitments(store, user_id, topics, output.commitments, clock.timezone, clock.now)
        store.topics.mark_facts_extracted(user_id, [topic["id"] for topic in topics])


def empty_report(topics: list[TopicRow]) -> FactsReport:
    counters = dict.fromkeys(
        ("added", "updated", "deleted", "people_added", "people_updated", "people_merged"), 0
    )
    return FactsReport(
        status="done", reason=None, topics=[topic["id"] for topic in topics], **counters
    )


def applied_at(context: MemoryContext) -> datetime:
    """The run's clock (`now_ts`), else the wall clock."""
    if context.now_ts is None:
        return datetime.now(UTC)
    return datetime.fromtimestamp(context.now_ts, UTC)


def make_extract_facts(deps: Deps):
    store = deps.store

    async def extract_facts(
        state: MemoryState, runtime: Runtime[MemoryContext]
    ) -> Command[Literal["defer_facts", "__end__"]]:
        """search (known facts and people) → extract (the Archivist) → apply, per batch."""
        user_id = runtime.context.user_id
        topics = await asyncio.to_thread(
            store.topics.without_facts, user_id, runtime.context.consolidation_batch_size
        )
        report = empty_report(topics)
        repairs: list[Repair] = []
        fallback = AgentFallback("no_model") if deps.models.get("archivist") is None else None
        batches = [] if fallback else await asyncio.to_thread(read_batches, store, user_id, topics)
        timezone = await asyncio.to_thread(user_timezone, deps, user_id)
        for batch in batches:
            facts = await asyncio.to_thread(store.facts.all_of, user_id)
            people = await asyncio.to_thread(store.people.all_of, user_id)
            result = await call_agent_json(
                deps.models,
                "archivist",
                archivist_request(facts, people, batch),
                ArchivistOutput,
                user_id=user_id,
            )
            if isinstance(result, AgentFallback):
                # These topics stay unextracted and are retried by a later run; the other
                # batches still get their turn.
                fallback = fallback or result
                continue
            repairs.extend(repairs_of("archivist", result))
            clock = Clock(now=applied_at(runtime.context), timezone=timezone)
            await asyncio.to_thread(
                apply_output, store, user_id, batch, result.value, report, clock
            )
            # The reply is applied for good; indexing that fails is caught up from the
            # vector queue, never by asking the Archivist again.
            await asyncio.to_thread(index_memory, deps.indexer, user_id, "facts", "people")
        if fallback is not None:
            report.update(status="skipped" if fallback.reason == "no_model" else "failed")
            report["reason"] = fallback.reason
            return Command(goto="defer_facts", update={"facts": report, "repairs": repairs})
        return Command(goto=END, update={"facts": report, "repairs": repairs})

    return extract_facts


def make_defer_facts(deps: Deps):
    async def defer_facts(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        """The Archivist's non-LLM path: no fact is invented; the topics it could not read
        keep their "facts not extracted" mark and wait for a run with a working model."""
        user_id = runtime.context.user_id
        waiting = await asyncio.to_thread(
            deps.store.topics.without_facts, user_id, runtime.context.consolidation_batch_size
        )
        report = FactsReport(**state["facts"])
        report["waiting"] = len(waiting)
        log.info(
            "user %s: facts deferred (%s); %d topic(s) wait",
            user_key(user_id),
            report["reason"],
            len(waiting),
        )
        return {"facts": report}

    return defer_facts
