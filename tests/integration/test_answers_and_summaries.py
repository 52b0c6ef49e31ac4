"""What a question asks of the conversation, on a real SQLite + Chroma store with the real
search and the local embedder: a question about what the assistant said is shown each
answer with the user's message it answered, and a summary request naming someone is
shown the user's messages naming them (the rules: tests/unit/test_prompts_and_names.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.passages import passage_scores
from nodes.response.ranking.recall import Recall
from nodes.response.ranking.weights import Ranking
from nodes.response.search import hybrid_search
from nodes.response.topic_content import render_topics_content
from tests.support.messages import USER, new_messages

pytestmark = pytest.mark.timeout(60)

PLAN = (
    "Here is how to organise your writing and submission process so that everything is "
    "ready well before the final cutoff dates. "
)
STEPS = [
    "Work backwards from the earliest date and give each document its own draft week.",
    "Keep one checklist per application with the forms, the letters and the uploads.",
    "Ask for your recommendation letters three weeks before you need them.",
    "Write the personal statement first, since every application reuses part of it.",
    "Upload a day early and keep the confirmation emails in one folder.",
    "Review the whole set once more on the evening before each submission.",
]
WRITING = [
    "How do I keep my writing process steady when I also work full time?",
    "Write for forty minutes every morning before work and stop mid-sentence.",
    "My writing process stalls whenever a submission portal is open in another tab.",
    "Close the portal while you write and submit in a separate, short session.",
    "I have a scholarship deadline on May 15, a visa appointment on May 20 and the "
    "university application closes on May 30.",
    PLAN + " ".join(STEPS * 2),
    "Which app keeps the drafts of my writing process organised before submission?",
    "Scrivener or a plain folder per application both work well.",
    "Is organising my writing by submission date better than by subject?",
    "By date: the nearest cutoff decides what you write next.",
    "Does a writing process with weekly submission goals make sense for a student?",
    "Yes, a weekly goal keeps the pace without a crunch.",
    "I want my writing process to leave a buffer before every submission.",
    "Leave two days: one for review, one for the upload.",
    "Can a writing group help my submission process?",
    "It can: a group gives you a deadline before the real one.",
    "My submission process needs a writing routine that survives a busy week.",
    "Keep the routine small enough to do on your worst day.",
    "Is writing every evening better for my submission process than weekends?",
    "Evenings: short daily sessions beat long weekend ones.",
]
ROOM = 1050
PROMPT = "a visa appointment on May 20"


async def test_an_answer_is_shown_with_the_message_it_answered(deps: Deps) -> None:
    rows = deps.indexer.store_messages(USER, new_messages(WRITING))
    (topic,) = deps.store.topics.save(USER, [("Writing plans", [row["id"] for row in rows])])
    asked = "How did you recommend organising my writing and submission process?"
    # No neighbour shares: the prompt is pulled up by the rule, not by its answer's hit.
    context = ResponseContext(user_id=USER).tuned(excerpt_neighbour_weight=0.0)
    found = hybrid_search(deps, context, [asked])["found"]["evidence"]
    prompt = rows[4]["id"]
    assert all(prompt not in hits[:3] for hits in (*found["text_hits"], *found["vector_hits"]))

    def shown(question: str) -> str:
        recall = Recall(
            [question],
            found["text_hits"],
            found["vector_hits"],
            scores=passage_scores(deps.embedder, [question]),
        )
        topics, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"]], recall, Ranking.of(context), ROOM
        )
        return render_topics_content(deps.store, USER, topics, excerpts=excerpts)

    with_answer = shown(asked)
    assert PROMPT in with_answer and "cutoff dates" in with_answer
    assert with_answer.index(PROMPT) < with_answer.index("cutoff dates")
    # The same hits for a question that asks for advice anew: no pairing.
    assert PROMPT not in shown("How should I organise my writing and submission process?")


ESSAY = [
    "I'm worried about meeting my new mentor, Robert, at the library on February 10.",
    "Bring a one-page summary of your essay and two questions for him.",
    "My essay work developed slowly this week, only the introduction is done.",
    "Slow weeks happen; set a smaller daily goal.",
    "The essay on media and gender has developed into three sections now.",
    "Three sections is good progress for a month.",
    "I'm inspired by Robert's 1985 essay that he shared on our April 4 call.",
    "Quote it, and say in your own words where you differ from it.",
    "My work on the conference paper developed over time into a journal article.",
    "A journal article needs a longer literature review.",
    "Should I follow the recommendation from Robert on stronger warrants, made on May 9?",
    "Yes: a claim without a warrant is where reviewers push back first.",
    "How has my essay work developed compared with last term?",
    "Your drafts are longer and your sources better than last term.",
    "The essay work developed well after the workshop on counterarguments.",
    "Counterarguments make the essay stronger; keep two per section.",
    "Since Robert suggested a journal, should the essay come before the conference paper?",
    "Finish the essay first; the paper can reuse its literature review.",
]
ROBERT = [
    "new mentor, Robert",
    "Robert's 1985 essay",
    "from Robert on stronger",
    "Robert suggested",
]


async def test_a_summary_naming_someone_shows_the_users_messages_naming_them(deps: Deps) -> None:
    rows = deps.indexer.store_messages(USER, new_messages(ESSAY))
    ids = [row["id"] for row in rows]
    topics = deps.store.topics.save(
        USER, [("Mentor", ids[:6]), ("Essay work", ids[6:12]), ("Journal plans", ids[12:])]
    )
    asked = "Can you give me a summary of how my work with Robert has developed over time?"
    context = ResponseContext(user_id=USER).tuned(message_hits_count=2)
    found = hybrid_search(deps, context, [asked])["found"]["evidence"]

    def shown(question: str) -> str:
        recall = Recall([question], found["text_hits"], found["vector_hits"])
        shown_topics, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"] for topic in topics], recall, Ranking.of(context), 900
        )
        return render_topics_content(deps.store, USER, shown_topics, excerpts=excerpts)

    summary = shown(asked)
    assert all(line in summary for line in ROBERT)
    # The same hits for a question that is no summary request: ranked as any question.
    plain = shown("How has my work with Robert developed over time?")
    assert not all(line in plain for line in ROBERT)
