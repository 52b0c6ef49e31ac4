"""What of the ranked messages fits a budget (`fill_budgets`): the same fill serves the
response graph's context (its excerpts) and the benchmark (the messages it shows)."""

from __future__ import annotations

from dataclasses import replace

from core.records import MessageRow
from nodes.response.ranking.fill import BLOCK_CHARS, fill_budget, fill_budgets
from nodes.response.ranking.recall import Recall, rank_items
from nodes.response.ranking.weights import Ranking


def row(message_id: int, role: str, content: str) -> MessageRow:
    return MessageRow(
        id=message_id,
        seq=message_id,
        external_id=str(message_id),
        role=role,  # type: ignore[typeddict-item]
        author=None,
        content=content,
        created_at=f"2026-03-02T09:{message_id:02d}:00+00:00",
        ts=1772442000.0 + 60 * message_id,
        topic_id=1,
        segment=0,
        kind="conversation",
    )


ANSWER = "\n".join(
    [f"Paragraph {i}: general advice about packing, maps and weather." for i in range(30)]
    + ["The tower opens at ten and the tram stops at its gate."]
)
MEMBERS = [
    (1, [row(1, "user", "When does the tower open?"), row(2, "assistant", ANSWER)]),
    (2, [row(3, "user", "I bought the tickets for Sunday."), row(4, "assistant", "Enjoy!")]),
]
HEADERS = {1: (20, 60), 2: (20, 60)}
RECALL = Recall(
    queries=["When does the tower open?"],
    text_hits=[[1, 3]],
    scores=lambda texts: [1.0 if "tower opens" in text else 0.1 for text in texts],
)


def test_a_small_budget_shows_the_long_answers_relevant_passage_and_counts_it_shown() -> None:
    filled = fill_budget(MEMBERS, HEADERS, RECALL, Ranking(), 1_000)
    assert filled.chars <= 1_000
    assert filled.topics[0] == 1
    assert {1, 2} <= filled.shown
    assert "The tower opens at ten" in filled.excerpts[1]
    assert "Paragraph 0:" not in filled.excerpts[1]


def test_each_budget_fills_as_one_fill_does_and_the_whole_fits_exactly_its_charge() -> None:
    budgets = [0, 150, 400, 1_000, 10_000]
    ranked = rank_items(MEMBERS, RECALL, Ranking())
    together = fill_budgets(MEMBERS, HEADERS, ranked, budgets)
    assert together == [fill_budget(MEMBERS, HEADERS, RECALL, Ranking(), b) for b in budgets]
    assert together[0].shown == frozenset() and together[0].topics == []
    everything = together[-1]
    assert everything.shown == {1, 2, 3, 4} and everything.excerpts == {}
    # A message shown whole through all its passages is charged their marks: never less.
    assert everything.chars >= sum(full + BLOCK_CHARS for _, full in HEADERS.values()) + sum(
        len(line) + 1
        for line in (
            "[User (2026-03-02 09:01)]: When does the tower open?",
            f"[Assistant (2026-03-02 09:02)]: {ANSWER}",
            "[User (2026-03-02 09:03)]: I bought the tickets for Sunday.",
            "[Assistant (2026-03-02 09:04)]: Enjoy!",
        )
    )


def test_a_question_about_what_the_assistant_said_ranks_its_long_answers_by_their_score() -> None:
    # The long answer (2) neighbours the only hit (1); the other topic's messages have only
    # their topic's rank. Asked about the user's own words, the answer's passages come
    # after every other message; asked what the assistant recommended, its most relevant
    # passage takes its place by its score, before the other topic, in English and Russian.
    members = [
        (1, [row(1, "user", "Which tram goes to the tower?"), row(2, "assistant", ANSWER)]),
        (2, [row(3, "user", "I bought the tickets."), row(4, "user", "Sunday works.")]),
    ]

    def order(question: str) -> list[tuple[int, str | None]]:
        recall = Recall(queries=[question], text_hits=[[1]], scores=RECALL.scores)
        items, passages = rank_items(members, recall, Ranking())
        return [(m, None if i is None else passages[m][i]) for _, m, i in items]

    mine = order("What did I say about the tram to the tower?")
    assert [m for m, _ in mine[:3]] == [1, 3, 4]
    assert {m for m, _ in mine[3:]} == {2}
    for asked in (
        "What did you recommend about the tram to the tower?",
        "Что ты мне советовал про трамвай до башни?",
    ):
        theirs = order(asked)
        assert [m for m, _ in theirs[:4]] == [1, 2, 3, 4], asked
        assert "The tower opens at ten" in (theirs[1][1] or ""), asked


def test_a_standing_instruction_the_turns_hits_reach_leads_the_fill() -> None:
    # 5 is an instruction about the subject that shares no word with the question; the
    # vector search finds it. Within the first `message_hits_count` vector hits it leads;
    # deeper, or with the rule off, it waits behind the full-text hit and its neighbours.
    rule = "Always give me the opening hours as a table."
    members = [
        (1, [row(1, "user", "When does the tower open?"), row(2, "assistant", "At ten.")]),
        (
            2,
            [
                row(3, "user", "Tickets are bought."),
                row(4, "user", "Sunday."),
                row(5, "user", rule),
            ],
        ),
    ]
    depth = Ranking().tuning.message_hits_count

    def order(vector_hits: list[int], ranking: Ranking | None = None) -> list[int]:
        recall = Recall(
            queries=["When can I visit the tower?"], text_hits=[[1]], vector_hits=[vector_hits]
        )
        items, _ = rank_items(members, recall, ranking or Ranking())
        return [message_id for _, message_id, _ in items]

    assert order([3, 5])[:2] == [5, 1]
    assert order([*range(100, 100 + depth), 5])[0] == 1
    off = Ranking(replace(Ranking().tuning, excerpt_rule_hits=0))
    assert order([3, 5], off)[0] == 1


def test_under_its_topics_date_a_line_shows_its_time_and_another_days_line_its_date() -> None:
    # The header gives the topic's date; a line of that day needs only its time, so the
    # same budget holds more. A message of the next day keeps its date, and so does every
    # line when the days are not given.
    late = {**row(5, "user", "The tower was closed, so we went on Monday."), "topic_id": 2}
    late["created_at"] = "2026-03-03T10:15:00+00:00"
    notes = {**row(6, "assistant", ANSWER.replace("tower opens", "museum shuts")), "topic_id": 2}
    members = [MEMBERS[0], (2, [*MEMBERS[1][1], late, notes])]
    ranked = rank_items(members, RECALL, Ranking())
    dated, compact = (
        fill_budgets(members, HEADERS, ranked, [1_500], days=days)[0]
        for days in (None, {1: "2026-03-02", 2: "2026-03-02"})
    )
    assert compact.shown == dated.shown == {1, 2, 3, 4, 5, 6}
    shown = compact.excerpts[2].split("\n")
    assert shown[:3] == [
        "[User (09:03)]: I bought the tickets for Sunday.",
        "[Assistant (09:04)]: Enjoy!",
        "[User (2026-03-03 10:15)]: The tower was closed, so we went on Monday.",
    ]
    assert shown[3].startswith("[Assistant (09:06)]: ")
    assert dated.excerpts[2].split("\n")[:2] == [
        "[User (2026-03-02 09:03)]: I bought the tickets for Sunday.",
        "[Assistant (2026-03-02 09:04)]: Enjoy!",
    ]
    # Five of the six lines shown are of the header's day: each without its date and a space.
    assert dated.chars - compact.chars == 5 * len("2026-03-02 ")


def test_an_answer_over_a_passage_goes_after_the_users_lines_a_short_reply_keeps_rank() -> None:
    tuning = Ranking().tuning
    medium = "Book the 9:40 train; " * (tuning.excerpt_answer_last_chars // 20)
    assert tuning.excerpt_answer_last_chars < len(medium) <= tuning.excerpt_long_answer_chars
    members = [
        (
            1,
            [
                row(1, "user", "Which train should I take to Porto?"),
                row(2, "assistant", medium),
                row(3, "user", "I booked the 9:40 train."),
                row(4, "assistant", "Great, the 9:40 train it is."),
            ],
        )
    ]
    recall = Recall(
        queries=["Which 9:40 train?"], text_hits=[[2, 4, 3, 1]], scores=lambda t: [0.5] * len(t)
    )
    items, _ = rank_items(members, recall, Ranking())
    order = [(message_id, index) for _, message_id, index in items]
    # The medium answer, the best full-text hit, neither leads nor is cut into passages:
    # it comes whole after the user's messages; the short reply keeps its rank.
    assert order[-1] == (2, None)
    assert order.index((4, None)) < order.index((1, None))
    off = Ranking(replace(tuning, excerpt_answer_last_chars=10**9))
    assert next(m for _, m, _ in rank_items(members, recall, off)[0]) == 2
