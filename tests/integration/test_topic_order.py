"""The search's candidates in the order of their best message
(`nodes.response.ranking.recall.order_topics`), on a real store (both
engines): one strong match outranks many weak ones."""

from __future__ import annotations

import pytest

from app.media import keep_document
from core.context import ResponseContext
from core.deps import Deps
from core.records import Member
from nodes.response.search import hybrid_search
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)

QUESTION = "Where did I put my passport?"

# The answer: the question asked back then and its reply, side by side.
DRAWER = [
    "Where did I put my passport after the trip?",
    "Your passport is in the blue drawer of the hall cabinet.",
    "Right, next to the spare keys.",
    "Good, tidy hall at last.",
]
# A long talk whose summary names passports and whose lines touch on them twice, far apart.
TRAVEL = [
    "We should plan the summer trip to Lisbon soon.",
    "Flights in July are getting expensive already.",
    "Passport renewals take six weeks, so check the dates on yours at some point.",
    "I would rather take the train part of the way.",
    "The night train from Paris is a nice idea.",
    "We could stop in Bordeaux for a day.",
    "The wine tours there are booked months ahead.",
    "Let us look at hotels near the old town.",
    "Airbnb flats are cheaper for a week.",
    "Do we need travel insurance this time?",
    "Yes, the bank card covers only flights.",
    "I will compare a few insurers tonight.",
    "My sister said the passport office is slow in summer, whatever that means for us.",
    "Then we book the train first.",
    "And the hotel after that.",
    "Agreed, let us decide by Friday.",
]


def store(deps: Deps, user_id: int) -> dict[str, int]:
    """Two archived topics: the travel talk (its summary names passports), then the drawer."""
    topics = {}
    for name, lines, summary in (
        ("travel", TRAVEL, "Summer trip planning: passport renewal, trains, hotels, insurance"),
        ("drawer", DRAWER, "Tidying the hall cabinet"),
    ):
        rows = deps.indexer.store_messages(user_id, new_messages(lines, prefix=f"{name}-"))
        [topic] = deps.store.topics.save(user_id, [(summary, [row["id"] for row in rows])])
        topics[name] = topic["id"]
    deps.indexer.index_all(user_id)
    return topics


def test_a_topic_holding_the_strong_match_comes_before_many_weak_ones(deps: Deps) -> None:
    mine = store(deps, USER)
    store(deps, OTHER)
    found = hybrid_search(deps, ResponseContext(user_id=USER), [QUESTION])["found"]
    candidates = found["topics"]
    by_fusion = sorted(candidates, key=lambda c: -c["fused_score"])
    # The fusion alone ranks the travel talk first: its summary and lines vote for it.
    assert [c["id"] for c in by_fusion[:2]] == [mine["travel"], mine["drawer"]]
    # Its best message is weaker than the drawer's question-and-reply.
    assert [c["id"] for c in candidates] == [mine["drawer"], mine["travel"]]
    assert candidates[0]["score"] > candidates[1]["score"]


LEASE = (
    "Apartment lease for Rua Augusta 12, signed in January.\n\n"
    + "The tenant keeps the apartment clean and quiet after ten in the evening. " * 12
    + "\n\nThe monthly rent is 950 euros, paid to the landlord, Mr Okafor, by the fifth."
)


def test_a_passage_hit_counts_for_the_message_that_carried_its_document(deps: Deps) -> None:
    """A document's text is what its message says, in the order as in the fusion: the
    lease's topic outranks a chat line that shares a word with the question."""
    chat = deps.indexer.store_messages(
        USER, new_messages(["My landlord finally fixed the heating yesterday."], prefix="chat-")
    )
    [heating] = deps.store.topics.save(USER, [("Heating repair", [chat[0]["id"]])])
    [carrier] = deps.indexer.store_messages(
        USER, new_messages(["[document: lease.txt]"], prefix="doc-")
    )
    keep_document(deps, USER, carrier["id"], "lease.txt", "text/plain", LEASE)
    [lease] = deps.store.topics.save(USER, [("[document: lease.txt]", [carrier["id"]])])
    deps.indexer.index_all(USER)
    question = "How much rent do I pay my landlord each month?"
    found = hybrid_search(deps, ResponseContext(user_id=USER), [question])["found"]
    # The chat line is a full-text hit on a message; the lease's message is none.
    assert [i for i, _ in deps.store.messages.search(USER, question, 10)] == [chat[0]["id"]]
    assert [c["id"] for c in found["topics"]] == [lease["id"], heating["id"]]


def test_a_hit_by_a_speaker_the_question_leaves_out_does_not_lift_its_topic(deps: Deps) -> None:
    """ "What did Alexei cook?": Topica's line naming the dish is a question asked of
    Alexei, worth only the reply beside it (`nodes.response.ranking.speakers`); Alexei's own line
    about cooking decides."""
    topics = {}
    for name, lines in (
        ("asked", ["I was at work all day.", "Did you cook the mushroom risotto?"]),
        ("cooked", ["I cooked a mushroom soup with thyme on Sunday.", "Sounds lovely."]),
    ):
        rows = deps.indexer.store_messages(USER, new_messages(lines, prefix=f"{name}-"))
        [topic] = deps.store.topics.save(USER, [(name, [row["id"] for row in rows])])
        topics[name] = topic["id"]
    deps.indexer.index_all(USER)
    found = hybrid_search(deps, ResponseContext(user_id=USER), ["What did Alexei cook?"])["found"]
    assert [c["id"] for c in found["topics"]] == [topics["cooked"], topics["asked"]]


def test_members_are_read_in_conversation_order_and_only_the_users_own(deps: Deps) -> None:
    mine, theirs = store(deps, USER), store(deps, OTHER)
    members = deps.store.messages.members_of(USER, [mine["drawer"], theirs["drawer"], 10**30])
    rows = deps.store.messages.of_topic(USER, mine["drawer"])
    assert members == {
        mine["drawer"]: [Member.of(row) for row in rows],
        theirs["drawer"]: [],
        10**30: [],
    }
    assert [member.author for member in members[mine["drawer"]]] == ["Alexei", "Topica"] * 2
    assert [member.speaker for member in members[mine["drawer"]]] == ["Alexei", "Topica"] * 2
    assert [member.role for member in members[mine["drawer"]]] == ["user", "assistant"] * 2
    assert [row["external_id"] for row in rows] == [f"drawer-{i}" for i in range(1, 5)]


PASTIMES = [
    "Grandma knits wool socks every winter.",
    "We bake rye bread on Sundays.",
    "My brother repairs old radios in the garage.",
    "The neighbours grow tomatoes on their balcony.",
    "Our choir sings at the spring fair.",
    "Dad paints watercolours of the harbour.",
    "My aunt collects stamps from Japan.",
    "The kids build kites out of newspaper.",
    "Uncle Pavel carves wooden spoons.",
    "Sasha plays chess in the park after work.",
]


def test_the_vector_list_runs_deeper_for_the_messages_than_the_fusion_reads(deps: Deps) -> None:
    """The fusion takes `message_hits_count` vector hits; the messages' own ranking (the
    candidates' order, the excerpts) takes `excerpt_vector_depth`."""
    topic_of = {}
    for index, line in enumerate(PASTIMES):
        [row] = deps.indexer.store_messages(USER, new_messages([line], prefix=f"p{index}-"))
        [topic] = deps.store.topics.save(USER, [(f"Note {index}", [row["id"]])])
        topic_of[row["id"]] = topic["id"]
    deps.indexer.index_all(USER)
    context = ResponseContext(
        user_id=USER,
        topics_threshold=1.01,  # no topic vector votes: only the message vectors do
        relevance_floor=False,
    ).tuned(message_hits_count=3, excerpt_vector_depth=7)
    question = "Which handicrafts does the family enjoy?"  # no word in common with any line
    assert deps.store.messages.search(USER, question, 10) == []
    found = hybrid_search(deps, context, [question])["found"]
    (vector_hits,) = found["evidence"]["vector_hits"]
    assert len(vector_hits) == 7
    assert {c["id"] for c in found["topics"]} == {topic_of[i] for i in vector_hits[:3]}
