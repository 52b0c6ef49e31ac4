"""Relevant messages of recalled topics: the cut the context assembly makes with the
ranking on a real SQLite + Chroma store (the ranking itself:
tests/unit/test_excerpt_ranking.py)."""

from __future__ import annotations

import pytest

from core.context import ResponseContext
from core.deps import Deps
from core.state import SelectedTopic
from nodes.response.assemble import recalled_sections, topics_section
from nodes.response.excerpts import relevant_excerpts
from nodes.response.ranking.passages import CUT, PassageScores, passage_scores
from nodes.response.ranking.recall import Recall, likeliest_rule
from nodes.response.ranking.weights import Ranking
from nodes.response.rerank_selection import ShownTopics
from nodes.response.search import hybrid_search
from nodes.response.topic_content import render_topics_content
from nodes.shared.budget import tokens
from tests.support.messages import OTHER, USER, new_messages

pytestmark = pytest.mark.timeout(60)


ZOO = [
    "We spent the whole Saturday walking around the city zoo with the kids.",
    "That sounds like a lovely day, which animals did they like most?",
    "The penguins, no doubt, they watched the feeding for half an hour.",
    "Penguins are always a hit. Did you see the new reptile house too?",
    "Yes, and then we had lunch at the cafe near the lake.",
    "Did anything surprise you there?",
    "The giraffe keeper let Mia feed a giraffe with lettuce!",
    "What a memory! How did she react when the giraffe came close?",
    "She was thrilled and called it Caramel on the spot.",
    "That is adorable, Caramel is a great name for a giraffe.",
    "On the way back we bought a plush penguin at the gift shop.",
    "Nice souvenir, it will remind her of the day.",
]
GARDEN = [
    "I planted tomatoes and basil in the garden this morning.",
    "Great, tomatoes like the sunny side of the garden.",
    "I also want to put a small bench near the roses.",
    "A wooden bench would look good next to the roses.",
    "The soil near the fence is very dry though.",
    "Mulch helps the soil keep water in summer.",
]


async def two_topics(deps: Deps) -> tuple[int, int]:
    rows = deps.indexer.store_messages(USER, new_messages(GARDEN + ZOO))
    garden, zoo = deps.store.topics.save(
        USER,
        [
            ("Garden work", [row["id"] for row in rows[: len(GARDEN)]]),
            ("A day at the zoo", [row["id"] for row in rows[len(GARDEN) :]]),
        ],
    )
    return garden["id"], zoo["id"]


async def test_topics_that_do_not_fit_are_cut_to_the_hit_and_the_reply_next_to_it(
    deps: Deps,
) -> None:
    garden, zoo = await two_topics(deps)
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    found = hybrid_search(deps, context, ["What name did Mia give the giraffe?"])["found"]
    (hits,) = found["evidence"]["text_hits"]
    giraffe = {row["id"] for row in deps.store.messages.all_of(USER) if "giraffe" in row["content"]}
    assert hits and set(hits[:3]) <= giraffe

    selected = [
        SelectedTopic(id=garden, reason="the garden", excerpt=None, score=1.0),
        SelectedTopic(id=zoo, reason="the zoo trip", excerpt=None, score=0.9),
    ]
    shown, recall = ShownTopics(selected, []), Recall(text_hits=found["evidence"]["text_hits"])
    whole, used = topics_section(deps.store, USER, shown, 8000, recall)
    assert "(excerpt)" not in whole and "Mulch helps" in whole and "plush penguin" in whole
    assert "Topic: Garden work" in whole and "Topic: A day at the zoo" in whole
    assert [(topic["id"], topic["cut"]) for topic in used] == [(garden, False), (zoo, False)]

    budget = 260
    cut, used = topics_section(deps.store, USER, shown, budget, recall)
    assert tokens(cut) <= budget
    assert (zoo, True) in [(topic["id"], topic["cut"]) for topic in used]
    # The answer ("called it Caramel") has no word of the question: it is kept as the
    # neighbour of the giraffe messages, while the first topic's opening lines are not.
    assert "called it Caramel" in cut and "feed a giraffe" in cut
    assert "planted tomatoes" not in cut
    # A topic shown in part has the short header (id and date), not the summary.
    assert f"=== Topic {zoo} (excerpt) ===\nDate: " in cut
    assert "Topic: A day at the zoo" not in cut
    # Without the hits, the same budget keeps what comes first and loses the answer.
    blind, _ = topics_section(deps.store, USER, shown, budget, Recall())
    assert tokens(blind) <= budget and "called it Caramel" not in blind


async def test_the_cut_fits_its_room_with_the_headers_it_is_shown_with(deps: Deps) -> None:
    """Every room from a header's worth to both topics whole: the rendered topics fit it,
    a topic shown whole with its full header, one shown in part with the short one."""
    garden, zoo = await two_topics(deps)
    hits = [[row["id"] for row in deps.store.messages.all_of(USER) if "giraffe" in row["content"]]]
    seen = set()
    for room in range(60, 3000, 7):
        shown, excerpts = relevant_excerpts(
            deps.store, USER, [garden, zoo], Recall(text_hits=hits), Ranking(), room
        )
        text = render_topics_content(deps.store, USER, shown, excerpts=excerpts)
        assert len(text) <= room, room
        for topic_id in shown:
            seen.add((topic_id, topic_id in excerpts))
            assert (f"=== Topic {topic_id} (excerpt) ===" in text) == (topic_id in excerpts)
    assert seen == {(garden, True), (garden, False), (zoo, True), (zoo, False)}


async def test_a_rerankers_excerpt_is_kept_and_other_users_topics_are_never_shown(
    deps: Deps,
) -> None:
    garden, zoo = await two_topics(deps)
    rows = deps.indexer.store_messages(OTHER, new_messages(["giraffe secrets of user two"]))
    (foreign,) = deps.store.topics.save(OTHER, [("Not yours", [rows[0]["id"]])])
    hits = [[row["id"] for row in deps.store.messages.all_of(USER) if "giraffe" in row["content"]]]
    given = {garden: "[User]: I planted tomatoes and basil."}
    shown, excerpts = relevant_excerpts(
        deps.store,
        USER,
        [garden, foreign["id"], zoo],
        Recall(text_hits=hits),
        Ranking(),
        900,
        given,
    )
    assert shown == [garden, zoo]
    assert excerpts[garden] == given[garden]
    assert "feed a giraffe" in excerpts[zoo] and "Caramel" in excerpts[zoo]
    assert "giraffe secrets" not in "".join(excerpts.values())


async def test_a_vector_filed_under_the_wrong_user_never_becomes_a_search_candidate(
    deps: Deps,
):
    """The search reads vector hits as ids only; the user's own rows decide what they are."""
    garden, zoo = await two_topics(deps)
    others = deps.indexer.store_messages(OTHER, new_messages(["The giraffe Caramel is mine."]))
    (foreign,) = deps.store.topics.save(OTHER, [("Giraffe", [others[0]["id"]])])
    deps.indexer.index_all(OTHER)
    question = "What name did Mia give the giraffe?"
    planted = deps.embedder.encode_query(question)
    # Planted in the user's own collections: the nearest topic and message of all.
    deps.vectors.upsert("topics", USER, [foreign["id"]], planted[None, :], [{"user_id": OTHER}])
    deps.vectors.upsert("messages", USER, [others[0]["id"]], planted[None, :])
    context = ResponseContext.from_settings(deps.settings, user_id=USER)

    found = hybrid_search(deps, context, [question])["found"]

    assert foreign["id"] in {i for i, _ in deps.vectors.nearest("topics", USER, [planted], 5)[0]}
    assert [c["id"] for c in found["topics"]] == [zoo, garden]


ART = [
    ("Caroline", "Hey Melanie! I painted a big mural at the community centre yesterday."),
    ("Melanie", "Wow, that sounds amazing, I would love to see it some day."),
    ("Caroline", "Melanie, do you still paint? Your painting of the harbour was so good."),
    ("Melanie", "Not much these days, the kids keep me busy most evenings."),
    ("Melanie", "Last weekend I finished a sunset painting with the kids at the lake."),
    ("Caroline", "That must look gorgeous over your fireplace."),
]


async def test_a_question_naming_one_speaker_keeps_that_speakers_own_lines(deps: Deps) -> None:
    """Asked "What did Melanie paint?", Caroline's lines match both words (she addresses
    Melanie by name) and Melanie's own answer matches one. Under a budget of about two
    lines the cut keeps Melanie's line; Caroline's count only for the replies beside
    them."""
    messages = new_messages([text for _, text in ART] + GARDEN)
    for message, author in zip(
        messages, [who for who, _ in ART] + ["Caroline"] * len(GARDEN), strict=True
    ):
        message["role"], message["author"] = "user", author
    rows = deps.indexer.store_messages(USER, messages)
    art, garden = deps.store.topics.save(
        USER,
        [
            ("Painting", [row["id"] for row in rows[: len(ART)]]),
            ("Garden work", [row["id"] for row in rows[len(ART) :]]),
        ],
    )
    question = "What did Melanie paint?"
    context = ResponseContext(user_id=USER, now_iso="2026-03-02T12:00:00+00:00")
    found = hybrid_search(deps, context, [question])["found"]
    hits = found["evidence"]["text_hits"]
    assert {row["content"] for row in rows if row["id"] in hits[0][:2]} == {ART[0][1], ART[2][1]}
    # Room for the excerpt's header and two of the topic's lines (each about 95 chars with
    # its label), not three.
    topic_ids, max_chars = [art["id"], garden["id"]], 300

    def excerpt(queries: list[str], run: ResponseContext | None = None) -> str:
        shown, excerpts = relevant_excerpts(
            deps.store, USER, topic_ids, Recall(queries, hits), Ranking.of(run), max_chars
        )
        assert shown == [art["id"]]
        return excerpts[art["id"]]

    named = excerpt([question])
    assert "sunset painting" in named and "mural" not in named and "harbour" not in named
    # Without the question's names (or with the rule off) the best full-text hits lead:
    # both of Caroline's lines, and no room is left for Melanie's answer.
    off = context.tuned(excerpt_named_speakers=False)
    for blind in (excerpt([]), excerpt([question], off)):
        assert "mural" in blind and "harbour" in blind and "sunset painting" not in blind

    # The assemble node's layers name the speakers from the search's queries (the turn's text).
    state = {
        "text": question,
        "selected_topics": [
            SelectedTopic(id=art["id"], reason="painting", excerpt=None, score=1.0),
            SelectedTopic(id=garden["id"], reason="garden", excerpt=None, score=0.5),
        ],
        "found": {**found, "evidence": {"text_hits": hits, "vector_hits": [], "dated": []}},
    }
    small = context.budgeted(topics=150)
    layers = dict(recalled_sections(deps.store, USER, state, set(), small))
    shown = layers["topics"].text
    assert tokens(shown) <= 150
    assert "sunset painting" in shown and "mural" not in shown and "harbour" not in shown


LISBON_ANSWER = "\n".join(
    [
        "Lisbon in spring is mild, so pack a light jacket and comfortable shoes for the hills.",
        "For food, try pastel de nata at the bakeries in the old town and grilled sardines.",
        "The Belem Tower opens at ten in the morning; go early, the queue grows by noon.",
        "Public transport is cheap: a rechargeable card covers the metro, buses and ferries.",
        "In the evening the viewpoints over the river are the best place to watch the sunset.",
        "If you have a spare day, Sintra's palaces are forty minutes away by train.",
    ]
    * 3
)


async def test_a_long_answer_that_does_not_fit_gives_its_relevant_passage(deps: Deps) -> None:
    """The context gets the passage of a long answer that answers the question, marked as
    cut, where the whole answer does not fit; without passages it gets nothing of it."""
    rows = deps.indexer.store_messages(
        USER, new_messages(["I am going to Lisbon in April, any tips?", LISBON_ANSWER])
    )
    (topic,) = deps.store.topics.save(USER, [("Lisbon trip", [row["id"] for row in rows])])
    question = "What time does the Belem Tower open?"
    # Passages of 600 characters: the answer's six lines repeat, a passage holds seven, so
    # the last passage opens at the tower's line without the first (at 500 every passage is
    # the six lines, the first among them): the cut shows, the jacket does not.
    context = ResponseContext(user_id=USER).tuned(excerpt_passage_chars=600)
    scores = passage_scores(deps.embedder, [question])
    room = 700
    assert len(LISBON_ANSWER) > context.tuning.excerpt_long_answer_chars > room
    shown, excerpts = relevant_excerpts(
        deps.store, USER, [topic["id"]], Recall(scores=scores), Ranking.of(context), room
    )
    text = render_topics_content(deps.store, USER, shown, excerpts=excerpts)
    assert len(text) <= room
    assert "The Belem Tower opens at ten" in excerpts[topic["id"]]
    assert f"{CUT} The Belem" in excerpts[topic["id"]]
    assert "pack a light jacket" not in excerpts[topic["id"]]
    shown, excerpts = relevant_excerpts(
        deps.store, USER, [topic["id"]], Recall(), Ranking.of(context), room
    )
    assert "Belem" not in "".join(excerpts.values())
    for room in range(60, 5000, 37):
        shown, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"]], Recall(scores=scores), Ranking.of(context), room
        )
        assert len(render_topics_content(deps.store, USER, shown, excerpts=excerpts)) <= room


PASTE = "\n".join(f"    total_{i} = sum(r.amount for r in rows if r.kind == {i})" for i in range(9))
TRACKER = [
    "I'm setting up the Flask app for my budget tracker with SQLite.\n" + PASTE,
    "Here is a plan for the app factory and the database module. " * 12,
    "Now I want to add a notes column to the transactions table.\n" + PASTE,
    "Use a migration that adds the column with a default. " * 12,
    "Finally I'm deploying the tracker on Render with Gunicorn.\n" + PASTE,
    "Three workers and a health check will do. " * 12,
]


async def test_a_recap_question_gets_the_opening_of_each_of_the_users_messages(
    deps: Deps,
) -> None:
    """A question asking in what order the user brought things up asks for every message
    of the user's: each long one shows its opening line where whole messages left room
    for one only. A message whose passages all fit is charged as written (a paste's
    indents and line ends), so the context never outgrows its room."""
    rows = deps.indexer.store_messages(USER, new_messages(TRACKER))
    (topic,) = deps.store.topics.save(USER, [("Budget tracker", [row["id"] for row in rows])])
    question = "In what order did I bring up the parts of my budget tracker?"
    scores = passage_scores(deps.embedder, [question])
    context = ResponseContext(user_id=USER)
    room = 900
    openings = ["setting up the Flask app", "add a notes column", "deploying the tracker"]

    def shown(ranking: Ranking, budget: int) -> str:
        topics, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"]], Recall([question], scores=scores), ranking, budget
        )
        text = render_topics_content(deps.store, USER, topics, excerpts=excerpts)
        assert len(text) <= budget
        return text

    digest = shown(Ranking.of(context), room)
    assert all(opening in digest for opening in openings) and CUT in digest
    assert "Three workers" not in digest
    plain = shown(Ranking.of(context.tuned(excerpt_recap_chars=0)), room)
    assert sum(opening in plain for opening in openings) < len(openings)
    for budget in range(60, 5000, 53):
        shown(Ranking.of(context), budget)


TRIANGLES = [
    "I'm trying to find the area of a triangle with sides 5, 12 and 13 using Heron's formula.",
    "Heron's formula gives an area of 30 square units for that triangle.",
    "How do I use the medians of a triangle to find its centroid?",
    "The centroid sits two thirds of the way along each median.",
    "Always format dates as Month Day, Year when I ask about deadlines.",
    "Noted.",
    "Always compare several solution methods when I ask about triangle area calculations.",
    "Understood.",
    "Always use APA 7th edition citation style when I ask about formatting references.",
    "Sure.",
    "Can you check the altitude of a triangle with base 10 and area 40?",
    "The altitude is 8: twice the area divided by the base.",
]


async def test_the_instruction_most_like_the_question_leads_where_the_hits_miss_it(
    deps: Deps,
) -> None:
    """Among many messages on its subject an instruction may be no top hit; the one most
    like the question by the local embedder, over its calibrated floor, still leads."""
    rows = deps.indexer.store_messages(USER, new_messages(TRIANGLES))
    (topic,) = deps.store.topics.save(USER, [("Triangles", [row["id"] for row in rows])])
    question = "How can I find the area of a triangle using medians and altitudes?"
    context = ResponseContext(user_id=USER).tuned(message_hits_count=2)
    found = hybrid_search(deps, context, [question])["found"]["evidence"]
    rule = rows[6]["id"]  # the user's (roles alternate from a user message)
    assert all(rule not in hits[:2] for hits in (*found["text_hits"], *found["vector_hits"]))

    def shown(question: str, scores: PassageScores | None) -> str:
        recall = Recall([question], found["text_hits"], found["vector_hits"], scores=scores)
        topics, excerpts = relevant_excerpts(
            deps.store, USER, [topic["id"]], recall, Ranking.of(context), 300
        )
        return render_topics_content(deps.store, USER, topics, excerpts=excerpts)

    led = shown(question, passage_scores(deps.embedder, [question]))
    assert "compare several solution methods" in led
    assert "format dates" not in led and "APA 7th" not in led
    assert "compare several solution methods" not in shown(question, None)
    # A question like none of them: no instruction leads.
    lunch = "What did we have for lunch at the cafe near the lake?"
    assert "Always" not in shown(lunch, passage_scores(deps.embedder, [lunch]))
    # Asked whether the user did it, the question is answered by the mentions: no
    # instruction leads, though this one is the likeliest for it too.
    whether = "Have I ever found the area of a triangle using medians and altitudes?"
    scores = passage_scores(deps.embedder, [whether])
    assert likeliest_rule(rows, scores, context.tuning.message_vector_floor) == {rule}
    assert "Always" not in shown(whether, scores)
