"""Merge: one conversation split across two days becomes one topic, by the similarity rule
or the Merger agent, never past `max_merged_size_chars` (the rule's summary alone:
tests/unit/test_merge_summary.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from app.memory import archive_user
from core.deps import Deps
from core.errors import StoreError
from core.state import MemoryState
from tests.support.conversations import (
    CAT_TALK,
    FIRST_DAY,
    POSTGRES_TALK,
    THIRD_DAY,
    archive_day_by_day,
    told_twice,
)
from tests.support.models import with_models


async def tell_twice(deps: Deps) -> list[MemoryState]:
    """The same conversation on one day and again two days later, each archived on its day:
    two chunks, two topics."""
    return await archive_day_by_day(deps, 1, told_twice())


def all_message_ids(deps: Deps) -> list[int]:
    return [message["id"] for message in deps.store.messages.all_of(1)]


async def test_the_rule_merges_a_conversation_told_twice(deps: Deps):
    first, second = await tell_twice(deps)

    [(first_topic_id,)] = [tuple(first["saved_topic_ids"])]
    [(second_topic_id,)] = [tuple(second["saved_topic_ids"])]
    assert first["merges"] == []
    [merge] = second["merges"]
    assert (merge["source_id"], merge["target_id"]) == (second_topic_id, first_topic_id)
    assert merge["decided_by"] == "rule"
    assert merge["similarity"] >= deps.settings.consolidation_similarity_threshold

    [topic] = deps.store.topics.all_of(1)
    assert topic["id"] == first_topic_id
    assert topic["message_count"] == 12
    assert topic["size_chars"] == 2 * sum(len(text) for text in CAT_TALK)
    assert topic["consolidation_checked"]
    assert topic["first_message_at"] == FIRST_DAY.isoformat()
    assert [m["id"] for m in deps.store.messages.of_topic(1, topic["id"])] == all_message_ids(deps)
    with pytest.raises(StoreError):
        deps.store.topics.get(1, second_topic_id)
    assert deps.vectors.vectors("topics", 1, [second_topic_id]) == {}
    assert deps.vectors.count("topics", 1) == 1


async def test_no_merge_past_max_merged_size(make_deps):
    deps = make_deps(max_merged_size_chars=2 * sum(len(text) for text in CAT_TALK) - 1)

    first, second = await tell_twice(deps)

    assert first["merges"] == second["merges"] == []
    topics = deps.store.topics.all_of(1)
    assert len(topics) == 2
    assert all(topic["consolidation_checked"] for topic in topics)
    assert deps.vectors.count("topics", 1) == 2


async def test_the_merger_can_refuse_and_sees_both_topics_messages(deps: Deps, fake_model):
    merger = fake_model(then={"should_merge": False, "reason": "different visits to the vet"})

    _, second = await tell_twice(with_models(deps, merger=merger))

    assert second["merges"] == []
    assert len(deps.store.topics.all_of(1)) == 2
    [prompt] = merger.prompts
    request = prompt[-1].content
    assert request.count("He refuses the renal food completely") == 2
    assert "2026-03-02" in request and "2026-03-04" in request


async def test_the_merger_decides_and_names_the_merged_topic(deps: Deps, fake_model):
    merger = fake_model(
        then={
            "should_merge": True,
            "reason": "same conversation",
            "merged_summary": "Марципан и диета",
        }
    )

    _, second = await tell_twice(with_models(deps, merger=merger))

    [merge] = second["merges"]
    assert (merge["decided_by"], merge["reason"]) == ("llm", "same conversation")
    [topic] = deps.store.topics.all_of(1)
    assert topic["summary"] == "Марципан и диета"
    assert [i for i, _ in deps.store.topics.search(1, "Марципан", 5)] == [topic["id"]]


async def test_a_broken_merger_reply_leaves_the_decision_to_the_rule(deps: Deps, fake_model):
    merger = fake_model(then="I think they should probably be merged, yes.")

    _, second = await tell_twice(with_models(deps, merger=merger))

    [merge] = second["merges"]
    assert (merge["decided_by"], second["merge_fallback"]) == ("rule", "invalid_output")
    assert merge["reason"].startswith("similarity ")
    assert len(deps.store.topics.all_of(1)) == 1
    assert len(merger.prompts) == 1


async def test_different_subjects_are_not_merged(deps: Deps, make_messages):
    postgres = [
        "How do I upgrade Postgres 14 to 16 running in Docker Compose?",
        "Dump with pg_dumpall, start a postgres:16 container on a new volume, restore.",
        "Can I avoid the downtime of a full dump and restore?",
        "Use pg_upgrade with both binaries, or logical replication into the new cluster.",
        "We have about 80 GB of data and a maintenance window on Sunday.",
        "Then pg_upgrade --link is fastest; rehearse it on staging first.",
    ]
    told = make_messages(CAT_TALK, prefix="a", start=FIRST_DAY)
    told += make_messages(postgres, prefix="b", start=THIRD_DAY)

    results = await archive_day_by_day(deps, 1, told)

    assert [state["merges"] for state in results] == [[], []]
    assert len(deps.store.topics.all_of(1)) == 2


async def test_one_chunk_of_several_sittings_is_consolidated_to_the_last_topic(
    make_deps, make_messages
):
    """The two days archived together: one chunk, two sittings, and a consolidation
    batch of one topic; every topic is still checked, and the retelling merged."""
    deps = make_deps(consolidation_batch_size=1)
    told = make_messages(CAT_TALK, prefix="a", start=FIRST_DAY)
    told += make_messages(POSTGRES_TALK, prefix="p", start=FIRST_DAY + timedelta(days=1))
    told += make_messages(CAT_TALK, prefix="b", start=THIRD_DAY)
    deps.indexer.store_messages(1, told)

    [result] = await archive_user(deps, 1, archive_all=True)

    assert len(result["saved_topic_ids"]) == 3
    assert [(m["source_id"], m["target_id"]) for m in result["merges"]] == [
        (result["saved_topic_ids"][2], result["saved_topic_ids"][0])
    ]
    assert all(topic["consolidation_checked"] for topic in deps.store.topics.all_of(1))
