"""Extract facts: skipped (with the reason) without a model; with the Archivist, fact and
people actions are applied with history and indexed, and other users' ids are refused."""

from __future__ import annotations

import re

from app.memory import archive_user
from core.deps import Deps
from core.records import MessageRow
from tests.support.messages import new_messages
from tests.support.models import with_models

# User 1's messages, stored by the `stored` fixture (conftest.py).
CONVERSATION = [
    "We finally adopted a cat, his name is Marzipan! And we moved to Pankow last month.",
    "Congratulations! How is Marzipan settling into the new flat?",
    "Fine. By the way, Petra from work, the one I called Petra Krause before, has a cat too.",
    "Nice, you can swap cat stories with her.",
]


def one_topic_splitter(fake_model, stored: list[MessageRow]):
    return fake_model(
        {
            "topics": [
                {
                    "summary": "Adopted Marzipan, moved to Pankow",
                    "start_msg_id": stored[0]["id"],
                    "end_msg_id": stored[-1]["id"],
                }
            ]
        }
    )


async def test_without_a_model_facts_are_skipped_with_the_reason(deps: Deps, stored):
    [result] = await archive_user(deps, 1, archive_all=True)

    report = result["facts"]
    assert (report["status"], report["reason"], report["waiting"]) == ("skipped", "no_model", 1)
    assert report["added"] == report["updated"] == report["deleted"] == 0
    assert deps.store.facts.all_of(1) == []
    assert deps.store.people.all_of(1) == []
    assert deps.vectors.count("facts", 1) == 0
    assert not any(topic["facts_extracted"] for topic in deps.store.topics.all_of(1))


def archivist_reply(berlin, no_pets, others_fact, petra, ira, irina, others_person) -> dict:
    """The archivist's actions: on the user's own facts and people, and on another user's
    fact and person (which must stay untouched)."""
    return {
        "facts": [
            {
                "action": "add",
                "type": "status",
                "content": "Has a cat named Marzipan",
                "importance": 75,
            },
            {"action": "add", "type": "identity", "content": "lives in berlin-mitte"},
            {
                "action": "update",
                "id": berlin["id"],
                "content": "Lives in Berlin-Pankow",
                "importance": 80,
                "type": "identity",
                "reason": "moved",
            },
            {"action": "delete", "id": no_pets["id"], "reason": "adopted a cat"},
            {"action": "update", "id": others_fact["id"], "content": "Has no dog"},
            {"action": "delete", "id": others_fact["id"]},
        ],
        "people": [
            {"action": "add", "name": "Marzipan", "aliases": ["Марципан"], "circle": "pets"},
            {"action": "update", "id": petra["id"], "bio": "Colleague with a cat"},
            {"action": "merge", "id": irina["id"], "merge_into": ira["id"]},
            {"action": "update", "id": others_person["id"], "bio": "hijacked"},
        ],
    }


async def test_archivist_actions_are_applied_with_history_and_vectors(
    deps: Deps, stored, fake_model, embedder
):
    store = deps.store
    berlin = store.facts.add(1, "Lives in Berlin-Mitte", "identity", 70)
    no_pets = store.facts.add(1, "Has no pets", "status", 40)
    deps.vectors.upsert("facts", 1, [no_pets["id"]], embedder.encode([no_pets["content"]]))
    others_fact = store.facts.add(2, "Has a dog called Rex", "identity", 80)
    petra = store.people.add(1, "Petra", circle="work")
    ira = store.people.add(1, "Ira", bio="Wife")
    irina = store.people.add(1, "Irina", aliases=["Ирина"], bio="Designer")
    others_person = store.people.add(2, "Oleg", bio="Brother")
    archivist = fake_model(
        archivist_reply(berlin, no_pets, others_fact, petra, ira, irina, others_person)
    )
    models = with_models(deps, splitter=one_topic_splitter(fake_model, stored), archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    [topic_id] = result["saved_topic_ids"]
    assert result["facts"] == {
        "status": "done",
        "reason": None,
        "topics": [topic_id],
        "added": 1,
        "updated": 1,
        "deleted": 1,
        "people_added": 1,
        "people_updated": 1,
        "people_merged": 1,
    }
    facts = {fact["content"]: fact for fact in store.facts.all_of(1)}
    assert set(facts) == {"Lives in Berlin-Pankow", "Has a cat named Marzipan"}
    assert facts["Has a cat named Marzipan"]["topic_id"] == topic_id
    assert facts["Lives in Berlin-Pankow"]["importance"] == 80
    history = [(row["fact_id"], row["action"], row["reason"]) for row in store.facts.history(1)]
    cat = facts["Has a cat named Marzipan"]["id"]
    assert history[2:] == [
        (cat, "add", None),
        (berlin["id"], "update", "moved"),
        (no_pets["id"], "delete", "adopted a cat"),
    ]
    assert all(row["topic_id"] == topic_id for row in store.facts.history(1)[2:])
    assert set(deps.vectors.vectors("facts", 1, [cat, berlin["id"], no_pets["id"]])) == {
        cat,
        berlin["id"],
    }
    # The other user's fact and person are untouched.
    assert store.facts.get(2, others_fact["id"]) == others_fact
    assert [row["action"] for row in store.facts.history(2)] == ["add"]
    assert store.people.get(2, others_person["id"]) == others_person
    assert deps.vectors.count("facts", 2) == 0
    people = {person["name"]: person for person in store.people.all_of(1)}
    assert set(people) == {"Petra", "Ira", "Marzipan"}
    assert people["Petra"]["bio"] == "Colleague with a cat"
    assert people["Ira"]["aliases"] == ["Irina", "Ирина"]
    assert people["Ira"]["bio"] == "Wife\nDesigner"
    assert people["Marzipan"]["aliases"] == ["Марципан"]
    assert set(deps.vectors.vectors("people", 1, [p["id"] for p in people.values()])) == {
        petra["id"],
        ira["id"],
        people["Marzipan"]["id"],
    }
    assert deps.vectors.vectors("people", 1, [irina["id"]]) == {}
    assert store.topics.get(1, topic_id)["facts_extracted"]


async def test_one_reply_may_touch_the_same_person_and_fact_twice(deps: Deps, stored, fake_model):
    """Update a person, then merge a duplicate into them; add a fact, then update it."""
    petra = deps.store.people.add(1, "Petra", circle="work")
    duplicate = deps.store.people.add(1, "Petra Krause", bio="Has a cat")
    berlin = deps.store.facts.add(1, "Lives in Berlin", "identity", 70)
    archivist = fake_model(
        {
            "facts": [
                {"action": "update", "id": berlin["id"], "content": "Lives in Berlin-Mitte"},
                {"action": "update", "id": berlin["id"], "content": "Lives in Berlin-Pankow"},
            ],
            "people": [
                {"action": "update", "id": petra["id"], "bio": "Colleague"},
                {"action": "merge", "id": duplicate["id"], "merge_into": petra["id"]},
            ],
        }
    )
    models = with_models(deps, splitter=one_topic_splitter(fake_model, stored), archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    assert len(archivist.prompts) == 1, "the topic's reply was applied more than once"
    assert result["facts"]["status"] == "done", result["facts"]["reason"]
    assert (result["facts"]["updated"], result["facts"]["people_merged"]) == (2, 1)
    [person] = deps.store.people.all_of(1)
    assert (person["bio"], person["aliases"]) == ("Colleague\nHas a cat", ["Petra Krause"])
    assert set(deps.vectors.vectors("people", 1, [petra["id"], duplicate["id"]])) == {petra["id"]}
    assert deps.store.facts.get(1, berlin["id"])["content"] == "Lives in Berlin-Pankow"
    assert deps.vectors.count("facts", 1) == 1
    assert deps.store.topics.all_of(1)[0]["facts_extracted"]


async def test_the_archivist_sees_known_facts_people_and_the_conversation(
    deps: Deps, stored, fake_model
):
    deps.store.facts.add(1, "Works as a backend developer", "identity", 90)
    deps.store.people.add(1, "Ira", circle="family", bio="Wife")
    deps.store.facts.add(2, "Secret of another user", "identity", 90)
    archivist = fake_model(then={"facts": [], "people": []})
    models = with_models(deps, splitter=one_topic_splitter(fake_model, stored), archivist=archivist)

    await archive_user(models, 1, archive_all=True)

    [prompt] = archivist.prompts
    request = prompt[-1].content
    assert "Works as a backend developer" in request
    assert "Ira" in request and "Wife" in request
    assert "we moved to Pankow last month" in request
    assert "Secret of another user" not in request


async def test_a_failing_archivist_leaves_topics_for_a_later_run(deps: Deps, stored, fake_model):
    archivist = fake_model(then='{"facts": [{"action": "add", "importance": 500}]')
    models = with_models(deps, splitter=one_topic_splitter(fake_model, stored), archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    assert (result["facts"]["status"], result["facts"]["reason"]) == ("failed", "invalid_output")
    assert deps.store.facts.all_of(1) == []
    assert not deps.store.topics.all_of(1)[0]["facts_extracted"]


async def test_a_transient_vector_store_failure_does_not_apply_a_reply_twice(
    deps: Deps, stored, fake_model, monkeypatch
):
    """The store writes commit before indexing; a retried node must not redo them."""
    berlin = deps.store.facts.add(1, "Lives in Berlin", "identity", 70)
    archivist = fake_model(
        then={
            "facts": [{"action": "update", "id": berlin["id"], "content": "Lives in Pankow"}],
            "people": [{"action": "add", "name": "Marzipan", "circle": "pets"}],
        }
    )
    upsert = deps.vectors.upsert
    failures = []

    def flaky_upsert(kind, *args, **kwargs):
        if kind == "people" and not failures:
            failures.append(kind)
            raise ConnectionError("vector store restarting")
        return upsert(kind, *args, **kwargs)

    monkeypatch.setattr(deps.vectors, "upsert", flaky_upsert)
    models = with_models(deps, splitter=one_topic_splitter(fake_model, stored), archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    assert failures == ["people"]
    assert [p["name"] for p in deps.store.people.all_of(1)] == ["Marzipan"]
    updates = [row for row in deps.store.facts.history(1) if row["action"] == "update"]
    assert len(updates) == 1
    assert result["facts"]["status"] == "done"
    assert deps.vectors.count("people", 1) == 1


def two_topic_splitter(fake_model, stored: list[MessageRow]):
    """Marzipan and the move (messages 1-2), then Petra (messages 3-4)."""
    first, second = stored[:2], stored[2:]
    return fake_model(
        {
            "topics": [
                {"summary": summary, "start_msg_id": part[0]["id"], "end_msg_id": part[-1]["id"]}
                for summary, part in (("Marzipan and the move", first), ("Petra", second))
            ]
        }
    )


async def test_one_call_reads_a_runs_topics_and_each_fact_keeps_its_topic(
    deps: Deps, stored, fake_model
):
    archivist = fake_model(
        then={
            "facts": [
                {"action": "add", "content": "Adopted a cat named Marzipan", "topic_id": None},
                {"action": "add", "content": "Colleague Petra has a cat", "topic_id": 10**6},
                {"action": "add", "content": "Petra lives in Pankow too", "topic_id": 2},
            ]
        }
    )
    splitter = two_topic_splitter(fake_model, stored)
    models = with_models(deps, splitter=splitter, archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    first, second = result["saved_topic_ids"]
    assert (first, second) == (1, 2), "a fresh store numbers topics from 1 (the reply names 2)"
    [prompt] = archivist.prompts
    request = prompt[-1].content
    assert 'topic_id="1"' in request and 'topic_id="2"' in request
    assert "Marzipan" in request and "Petra from work" in request
    assert result["facts"]["status"] == "done" and result["facts"]["added"] == 3
    source = {fact["content"]: fact["topic_id"] for fact in deps.store.facts.all_of(1)}
    assert source == {
        # No usable topic_id: the topic whose conversation shares most words with the fact.
        "Adopted a cat named Marzipan": first,
        "Colleague Petra has a cat": second,
        # Named: the named topic, though "Pankow" is said in the first.
        "Petra lives in Pankow too": second,
    }
    assert all(topic["facts_extracted"] for topic in deps.store.topics.all_of(1))


async def test_every_topic_gets_its_facts_batch_after_batch(make_deps, fake_model):
    deps = make_deps(consolidation_batch_size=1)
    stored = deps.indexer.store_messages(1, new_messages(CONVERSATION))
    archivist = fake_model(
        {"facts": [{"action": "add", "content": "Fact A"}]},
        {"facts": [{"action": "add", "content": "Fact B"}]},
    )
    models = with_models(deps, splitter=two_topic_splitter(fake_model, stored), archivist=archivist)

    [result] = await archive_user(models, 1, archive_all=True)

    read = [re.findall(r'topic_id="(\d+)"', prompt[-1].content) for prompt in archivist.prompts]
    assert sorted(int(ids[0]) for ids in read) == sorted(result["saved_topic_ids"])
    assert [len(ids) for ids in read] == [1, 1]  # a batch of one topic per run
    # A fact from a call that read one topic is that topic's, named or not.
    source = {fact["content"]: fact["topic_id"] for fact in deps.store.facts.all_of(1)}
    assert source == {"Fact A": int(read[0][0]), "Fact B": int(read[1][0])}
    assert deps.store.topics.without_facts(1, 10) == []
