"""A request for advice gets the user's stated preference into a small context, on a real
store (SQLite, Chroma, the real embedder and full-text search), for its user only."""

from __future__ import annotations

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.recall import Recall
from nodes.response.ranking.weights import Ranking
from nodes.response.search import hybrid_search
from nodes.response.topic_content import render_topics_content
from tests.support.messages import OTHER, USER, new_messages

PREFERENCE = "I prefer writing in the mornings between 7 and 9, when I'm most focused."
WRITING = [
    "I need to plan my writing sessions for the personal statement; the deadline is in "
    "three weeks and the plan keeps slipping.",
    "A plan of sessions helps: set a goal for each writing session and track the word "
    "count of every draft across the week.",
    "My writing sessions keep slipping because work meetings run late and I lose the plan "
    "for the week.",
    "Block the writing sessions in your calendar like meetings, and plan a short review "
    "after each week of sessions.",
    PREFERENCE,
    "Good to know, protect that time from email.",
    "How many words per writing session should I plan for this week's sessions?",
    "Plan 500 words per writing session and one longer session at the weekend.",
]


def store(deps: Deps, user_id: int, lines: list[str]) -> int:
    rows = deps.indexer.store_messages(user_id, new_messages(lines))
    [topic] = deps.store.topics.save(user_id, [("Writing plan", [row["id"] for row in rows])])
    deps.indexer.index_all(user_id)
    return topic["id"]


def context_for(deps: Deps, question: str, context: ResponseContext, room: int) -> str:
    found = hybrid_search(deps, context, [question])["found"]
    recall = Recall.of({"found": found}, deps.embedder)
    topic_ids = [candidate["id"] for candidate in found["topics"]]
    shown, excerpts = relevant_excerpts(
        deps.store, context.user_id, topic_ids, recall, Ranking.of(context), room
    )
    text = render_topics_content(deps.store, context.user_id, shown, excerpts=excerpts)
    assert len(text) <= room
    return text


def with_and_without(
    deps: Deps, question: str, context: ResponseContext, room: int
) -> tuple[str, str]:
    """The context for `question` with the stated preferences leading, and with them off."""
    off = context.tuned(excerpt_preference_chars=0)
    return context_for(deps, question, context, room), context_for(deps, question, off, room)


def test_a_request_for_advice_shows_the_users_stated_preference_first(deps: Deps) -> None:
    store(deps, USER, WRITING)
    theirs = [line.replace("mornings between 7 and 9", "late evenings") for line in WRITING]
    store(deps, OTHER, theirs)
    context = ResponseContext(user_id=USER)
    question = "Can you help me plan my writing sessions for the upcoming week?"
    room = 320
    led, plain = with_and_without(deps, question, context, room)
    assert PREFERENCE in led
    assert PREFERENCE not in plain
    # A question about what was is no request for advice: ranked as before.
    asked = "When did I plan my writing sessions for the week?"
    assert len(set(with_and_without(deps, asked, context, room))) == 1
    # The other user's preference is never anyone else's context.
    other = context_for(deps, question, ResponseContext(user_id=OTHER), room)
    assert "late evenings" in other
    assert "late evenings" not in led and "late evenings" not in plain


LIGHT = (
    "I'm trying to keep my Flask budget app lightweight and easy to maintain, so I prefer "
    "simple, minimal dependencies over big frameworks. How can I make sure the app stays "
    "small while I still add the features I planned for the next weeks? I don't want "
    "to pull in a whole stack of extensions for every small feature, and the deployment "
    "on the free tier has little memory to spare."
)
APP = [
    "Which libraries draw the monthly charts of my expenses best, bar charts or pies?",
    "Chart.js draws both charts from a JSON endpoint; pies suit the categories.",
    "The login page of my budget app needs libraries for password hashing and sessions.",
    "Werkzeug hashes the passwords and Flask keeps the login session in a signed cookie.",
    LIGHT,
    "Then use what Flask ships with and add only what a feature cannot do without.",
    "The charts libraries want a date index on the expenses table for the monthly view.",
    "Index the date column; every chart of the month filters by it.",
]


def test_a_long_preference_most_like_the_request_leads_it(deps: Deps) -> None:
    store(deps, USER, APP)
    store(deps, OTHER, [line.replace("minimal dependencies", "every extension") for line in APP])
    context = ResponseContext(user_id=USER)
    assert len(LIGHT) > context.tuning.excerpt_preference_chars  # too long to lead as a hit
    question = "What libraries would you suggest for the login and the charts of my Flask app?"
    room = 560
    led, off = with_and_without(deps, question, context, room)
    assert LIGHT in led
    assert LIGHT not in off
    # Its likeness to the request is what lets it lead: under a higher floor it does not.
    floored = context_for(deps, question, context.tuned(message_vector_floor=0.99), room)
    assert LIGHT not in floored and APP[0] in floored
    assert "every extension" not in led
