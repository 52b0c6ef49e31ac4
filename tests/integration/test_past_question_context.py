"""A question about the user's own past on a real SQLite + Chroma store with the local
embedder: no standing instruction takes a small context's room, and a yes/no question
naming someone gets every mention of them (`nodes.response.ranking.past`; the ranking
alone: tests/unit/test_likeliest_rule.py, test_prompts_and_names.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.passages import passage_scores
from nodes.response.ranking.recall import Recall, likeliest_rule, rank_members
from nodes.response.ranking.weights import Ranking
from nodes.response.search import hybrid_search
from nodes.response.topic_content import render_topics_content
from tests.support.messages import USER, new_messages

pytestmark = pytest.mark.timeout(60)

STATEMENT = [
    "I want to use the storytelling advice Bryan gave me at the film festival in my statement.",
    "Start with the scene Bryan suggested, then link it to your goals.",
    "I met Matthew at the media hub and he gave me tips on grant applications.",
    "Matthew's tips fit the grant section well.",
    "Shawn's advice on storytelling was to weave personal and academic threads.",
    "Weaving threads is a good metaphor for the statement.",
    "Always keep my statement under 900 words when I ask about storytelling.",
    "Noted.",
    "I've never met Bryan, so please correct anyone who says he advised me.",
    "Understood, I will not mention him.",
]
TRIANGLES = [
    "Always give step-by-step diagrams when I ask about classifying triangles.",
    "Noted.",
    "I've completed 10 triangle classification problems and got 8 of them right.",
    "Good progress: 80% is a solid start.",
    "Can you explain how to classify a triangle by its angles?",
    "Compare the largest angle with 90 degrees.",
    "I've now finished 15 classification problems and my accuracy stays above 80%.",
    "Well done, that is consistent.",
]


async def stored(deps: Deps, texts: list[str], title: str) -> tuple[list[dict], int]:
    rows = deps.indexer.store_messages(USER, new_messages(texts))
    (topic,) = deps.store.topics.save(USER, [(title, [row["id"] for row in rows])])
    return rows, topic["id"]


def recall_for(deps: Deps, question: str) -> Recall:
    """The turn's recall as the response graph's search finds it, passages scored."""
    found = hybrid_search(deps, ResponseContext(user_id=USER), [question])["found"]["evidence"]
    scores = passage_scores(deps.embedder, [question])
    return Recall([question], found["text_hits"], found["vector_hits"], scores=scores)


def shown(deps: Deps, topic: int, question: str, budget: int) -> str:
    ranking = Ranking.of(ResponseContext(user_id=USER))
    recall = recall_for(deps, question)
    topics, excerpts = relevant_excerpts(deps.store, USER, [topic], recall, ranking, budget)
    return render_topics_content(deps.store, USER, topics, excerpts=excerpts)


async def test_a_yes_no_question_naming_someone_gets_every_mention_of_them(deps: Deps) -> None:
    rows, topic = await stored(deps, STATEMENT, "Personal statement")
    question = "Have I ever met Bryan and received storytelling advice from him?"
    asked = "What storytelling advice did Bryan give me?"
    ranking = Ranking.of(ResponseContext(user_id=USER))
    order = [m for _, m in rank_members([(topic, rows)], recall_for(deps, asked), ranking)]
    met, never = rows[0]["id"], rows[8]["id"]
    # Asked as any question, a message without the name comes before one of the two.
    assert set(order[:2]) != {met, never}
    text = shown(deps, topic, question, 300)
    assert "film festival" in text and "never met Bryan" in text
    assert "Matthew" not in text


async def test_a_count_of_what_the_user_did_is_not_led_by_an_instruction(deps: Deps) -> None:
    rows, topic = await stored(deps, TRIANGLES, "Triangle classification")
    count = "How many triangle classification problems have I completed?"
    floor = ResponseContext(user_id=USER).tuning.message_vector_floor
    scores = passage_scores(deps.embedder, [count])
    # The instruction is the one most like the question, which would make it lead.
    assert likeliest_rule(rows, scores, floor) == {rows[0]["id"]}
    request = "How should I approach classifying triangles?"
    assert "step-by-step diagrams" in shown(deps, topic, request, 320)
    text = shown(deps, topic, count, 320)
    assert "step-by-step diagrams" not in text
    assert "10 triangle classification problems" in text
    assert "15 classification problems" in text
