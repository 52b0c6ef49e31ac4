"""Documents kept as memory, against real SQLite, Chroma and the local encoder: a
document's passages make its topic the first candidate for a question only its text
answers, `search_history` and `get_topics_content` show the text under the file name, the
memory-only answer quotes the passage closest to the question, and another user's
question never reaches them."""

from __future__ import annotations

from app.media import keep_document, split_passages
from core.context import ResponseContext
from core.deps import Deps
from core.records import NewMessage
from core.state import ResponseState, SelectedTopic
from nodes.response.offline_answer import recall_topics
from nodes.response.search import topic_candidates
from nodes.response.tools import search_history_result
from nodes.response.topic_content import render_topics_content
from tests.support.found import found

USER, OTHER = 1, 2
LEASE = (
    "Apartment lease for Rua Augusta 12, signed in January.\n\n"
    + "The tenant keeps the apartment clean and quiet after ten in the evening. " * 12
    + "\n\nThe monthly rent is 950 euros, paid to the landlord, Mr Okafor, by the fifth."
)
CHATS = [
    "I started learning to bake sourdough bread last week.",
    "Our office coffee machine was replaced by an espresso one.",
    "My sister Olga is visiting in June, we plan a trip to Porto.",
]


def said(user_id: int, index: int, text: str) -> NewMessage:
    message = NewMessage(
        external_id=f"u{user_id}-{index}", role="user", content=text,
        created_at=f"2026-03-0{index + 1}T10:00:00",
    )  # fmt: skip
    return message


def world(deps: Deps) -> int:
    """Each chat line its own topic, and the lease document in a topic of its own; the
    lease topic's id."""
    store = deps.store
    for index, text in enumerate(CHATS):
        [row] = deps.indexer.store_messages(USER, [said(USER, index, text)])
        store.topics.save(USER, [(text, [row["id"]])])
    [row] = deps.indexer.store_messages(USER, [said(USER, 5, "[document: lease.txt]")])
    keep_document(deps, USER, row["id"], "lease.txt", "text/plain", LEASE)
    [topic] = store.topics.save(USER, [("[document: lease.txt]", [row["id"]])])
    deps.indexer.index_all(USER)
    return topic["id"]


def context(user_id: int = USER) -> ResponseContext:
    return ResponseContext(user_id=user_id, now_iso="2026-04-01T12:00:00+00:00")


def test_passages_follow_paragraphs_and_stay_short() -> None:
    passages = split_passages(LEASE)
    assert len(passages) >= 2
    assert all(len(passage) <= 800 for passage in passages)
    assert passages[-1].endswith("by the fifth.")


def test_a_documents_topic_is_found_by_what_only_its_text_says(deps: Deps) -> None:
    lease_topic = world(deps)
    [first, *_] = topic_candidates(deps, context(), ["Who is my landlord and what is the rent?"])
    assert first["id"] == lease_topic
    assert deps.vectors.count("passages", USER) == len(split_passages(LEASE))


def test_search_history_and_topic_content_show_the_text_under_its_file_name(
    deps: Deps,
) -> None:
    lease_topic = world(deps)
    result = search_history_result(deps, context(), "landlord Okafor rent")
    assert result.startswith("Found")
    assert f"[ID:{lease_topic}]" in result.splitlines()[1]
    assert '<document name="lease.txt">' in result and "Mr Okafor" in result
    content = render_topics_content(deps.store, USER, [lease_topic])
    assert "The monthly rent is 950 euros" in content


def test_the_memory_only_answer_quotes_the_closest_passage(deps: Deps) -> None:
    lease_topic = world(deps)
    pick = SelectedTopic(id=lease_topic, reason="the lease", excerpt=None, score=1.0)
    state = ResponseState(
        text="How much is my rent?",
        found=found(queries=["How much is my rent?"]),
        selected_topics=[pick],
    )
    [recalled] = recall_topics(deps, context(), state)
    [quote] = recalled.quotes
    assert quote["content"].startswith("[document: lease.txt] «")
    assert "950 euros" in quote["content"]


def test_another_users_question_never_reaches_the_document(deps: Deps) -> None:
    world(deps)
    deps.indexer.store_messages(OTHER, [said(OTHER, 0, "Who is my landlord?")])
    assert topic_candidates(deps, context(OTHER), ["landlord Okafor rent 950 euros"]) == []
    assert deps.store.attachments.search(OTHER, "Okafor", 10) == []
    vector = deps.embedder.encode_query("landlord Okafor")
    assert deps.vectors.query("passages", OTHER, vector, 10) == []
