"""Extract facts: the Archivist agent turns finished topics into fact and people updates.

search (known facts and people) → extract (the model) → diff (validated
actions) → apply (store + vectors). Without a model the step is skipped and
the reason recorded: facts are never invented, and topics stay marked
"facts not extracted" so a later run with a model catches up.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graphs.context import MemoryContext
from graphs.deps import Deps
from graphs.state import FactsReport, MemoryState
from nodes.formatting import clip, short_time, transcript
from nodes.indexing import index_records
from nodes.structured import ainvoke_json
from prompts import archivist as prompt
from stores.records import FactRow, FactType, PersonRow
from stores.relational import StoreError

log = logging.getLogger(__name__)

CONVERSATION_CHARS = 24_000


class FactAction(BaseModel):
    action: Literal["add", "update", "delete"]
    id: int | None = None
    type: FactType = "context"
    content: str = ""
    importance: int = Field(default=50, ge=0, le=100)
    reason: str | None = None


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


def fact_text(fact: FactRow) -> str:
    return f"[{fact['id']}] ({fact['type']}, {fact['importance']}) {fact['content']}"


def person_text(person: PersonRow) -> str:
    aliases = f" aka {', '.join(person['aliases'])}" if person["aliases"] else ""
    circle = person["circle"] or "?"
    return f"[{person['id']}] {person['name']}{aliases} ({circle}): {person['bio'] or ''}"


def make_extract_facts(deps: Deps):
    store = deps.store

    async def apply(
        user_id: int, topic_id: int, output: ArchivistOutput, report: FactsReport
    ) -> None:
        changes = await asyncio.to_thread(apply_and_mark, user_id, topic_id, output, report)
        touched_facts, removed_facts, touched_people, removed_people = changes
        # The reply is applied for good; indexing may fail (a vector store that is down) and
        # is then caught up by reindex_pending, never by asking the Archivist again.
        fact_ids = [f["id"] for f in touched_facts] + removed_facts
        people_ids = [p["id"] for p in touched_people] + removed_people
        try:
            await index_records(deps, user_id, "facts", list(dict.fromkeys(fact_ids)))
            await index_records(deps, user_id, "people", list(dict.fromkeys(people_ids)))
        except Exception as error:  # the pending table keeps what is left to index
            log.warning("user %s: facts stored, indexing postponed: %s", user_id, error)

    def apply_and_mark(
        user_id: int, topic_id: int, output: ArchivistOutput, report: FactsReport
    ) -> tuple[list[FactRow], list[int], list[PersonRow], list[int]]:
        """The reply's actions and the topic's facts_extracted flag, in one transaction."""
        with store.atomic():
            changes = apply_actions(user_id, topic_id, output, report)
            store.mark_facts_extracted(user_id, [topic_id])
        return changes

    def apply_actions(
        user_id: int, topic_id: int, output: ArchivistOutput, report: FactsReport
    ) -> tuple[list[FactRow], list[int], list[PersonRow], list[int]]:
        """Apply validated actions to the store; refused ones (other users' ids) are logged."""
        known = {fact["content"].casefold() for fact in store.list_facts(user_id)}
        touched_facts: list[FactRow] = []
        removed_facts: list[int] = []
        for action in output.facts:
            try:
                if action.action == "add" and action.content.strip():
                    if action.content.strip().casefold() in known:
                        continue
                    fact = store.add_fact(
                        user_id,
                        action.content,
                        action.type,
                        action.importance,
                        topic_id,
                        action.reason,
                    )
                    known.add(fact["content"].casefold())
                    touched_facts.append(fact)
                    report["added"] += 1
                elif action.action == "update" and action.id is not None:
                    touched_facts.append(
                        store.update_fact(
                            user_id,
                            action.id,
                            content=action.content or None,
                            importance=action.importance,
                            fact_type=action.type,
                            reason=action.reason,
                            topic_id=topic_id,
                        )
                    )
                    report["updated"] += 1
                elif action.action == "delete" and action.id is not None:
                    store.delete_fact(user_id, action.id, action.reason, topic_id)
                    removed_facts.append(action.id)
                    report["deleted"] += 1
            except StoreError as error:  # an id of another user or a bad value: refused, logged
                log.warning("user %s: archivist fact action refused: %s", user_id, error)
        touched_people: list[PersonRow] = []
        removed_people: list[int] = []
        for action in output.people:
            try:
                if action.action == "add" and action.name.strip():
                    touched_people.append(
                        store.add_person(
                            user_id,
                            action.name,
                            action.aliases,
                            action.username,
                            action.circle,
                            action.bio,
                        )
                    )
                    report["people_added"] += 1
                elif action.action == "update" and action.id is not None:
                    touched_people.append(
                        store.update_person(
                            user_id,
                            action.id,
                            name=action.name or None,
                            aliases=action.aliases,
                            username=action.username,
                            circle=action.circle,
                            bio=action.bio,
                        )
                    )
                    report["people_updated"] += 1
                elif action.action == "merge" and action.id is not None and action.merge_into:
                    touched_people.append(store.merge_people(user_id, action.id, action.merge_into))
                    removed_people.append(action.id)
                    report["people_merged"] += 1
            except StoreError as error:
                log.warning("user %s: archivist person action refused: %s", user_id, error)
        return touched_facts, removed_facts, touched_people, removed_people

    async def extract_facts(state: MemoryState, runtime: Runtime[MemoryContext]) -> dict:
        user_id = runtime.context.user_id
        topics = await asyncio.to_thread(
            store.topics_without_facts, user_id, runtime.context.consolidation_batch_size
        )
        report = FactsReport(
            status="done",
            reason=None,
            topics=[topic["id"] for topic in topics],
            added=0,
            updated=0,
            deleted=0,
            people_added=0,
            people_updated=0,
            people_merged=0,
        )
        model = deps.models.get("archivist")
        if model is None:
            report.update(status="skipped", reason="no archivist model configured")
            return {"facts": report}
        failures = []
        for topic in topics:
            messages = await asyncio.to_thread(store.topic_messages, user_id, topic["id"])
            facts = await asyncio.to_thread(store.list_facts, user_id)
            people = await asyncio.to_thread(store.list_people, user_id)
            request = [
                SystemMessage(prompt.SYSTEM),
                HumanMessage(
                    prompt.USER.format(
                        facts="\n".join(map(fact_text, facts)) or "(none)",
                        people="\n".join(map(person_text, people)) or "(none)",
                        topic_id=topic["id"],
                        date=short_time(topic["first_message_at"]),
                        conversation=clip(transcript(messages), CONVERSATION_CHARS),
                    )
                ),
            ]
            try:
                output, _ = await ainvoke_json(model, request, ArchivistOutput)
            except Exception as error:  # the topic stays unextracted and is retried next run
                failures.append(f"topic {topic['id']}: {type(error).__name__}")
                log.warning(
                    "user %s: archivist failed on topic %s: %s", user_id, topic["id"], error
                )
                continue
            await apply(user_id, topic["id"], output, report)
        if failures:
            report.update(status="failed", reason="; ".join(failures))
        return {"facts": report}

    return extract_facts
