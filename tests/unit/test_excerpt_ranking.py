"""Relevant messages of recalled topics: the ranking, worked out by hand (the cut the
context assembly makes with it on a real store: tests/integration/test_excerpts.py)."""

from __future__ import annotations

from functools import partial

import pytest

from core.context import ResponseContext
from core.records import Member
from core.tuning import packaged_tuning
from nodes.response.ranking.messages import (
    long_answers,
    message_scores,
    rank_topic_messages,
    replies_after,
    standing_rules,
)
from nodes.response.ranking.recall import speaker_rules
from nodes.response.ranking.weights import Ranking

PROFILE = packaged_tuning()
LEAD_HITS = PROFILE.excerpt_lead_hits
NEIGHBOUR_HITS = PROFILE.excerpt_neighbour_hits
NEIGHBOUR_REACH = PROFILE.excerpt_neighbour_reach
NEIGHBOUR_WEIGHT = PROFILE.excerpt_neighbour_weight

adjacent = partial(rank_topic_messages, neighbour_weight=0.7, neighbour_reach=1)
"""The ranking whose worked examples below were done by hand with a hit lending 0.7 of its
vote to the messages right beside it and no further (the defaults decay further:
`test_a_hits_share_fades_with_each_place_away`)."""


def test_messages_rank_by_topic_hits_and_the_neighbours_of_hits() -> None:
    # k=1. Priors: topic 10 (rank 1) 1/2 for 1, 2, 3; topic 20 (rank 2) 1/3 for 4, 5.
    # Hit 5 at rank 1 votes 1/2 and lends its neighbour 4 0.7 * 1/2. 99 is in no topic:
    # it takes rank 2 but gets nothing. Hit 2 at rank 3 votes 1/4 and lends 1 and 3
    # 0.7 * 1/4. Scores: 1: 0.675, 2: 0.75, 3: 0.675, 4: 0.683, 5: 0.833 (ties: topic
    # rank, then conversation order).
    topics = [(10, [1, 2, 3]), (20, [4, 5])]
    assert adjacent(topics, [[5, 99, 2]], k=1) == [
        (20, 5),
        (10, 2),
        (20, 4),
        (10, 1),
        (10, 3),
    ]
    # No hits: topics in rank order, each in conversation order.
    assert adjacent(topics, [], k=1) == [(10, 1), (10, 2), (10, 3), (20, 4), (20, 5)]
    assert adjacent([], [[1, 2]], k=60) == []


def test_only_top_hits_lend_their_neighbours_a_share() -> None:
    # One topic (equal priors). Hit 2 at rank NEIGHBOUR_HITS votes 1/21 and lends 1 and 3
    # 0.7/21 each; hit 4 just below votes 1/22 and lends nothing, so 3 stays behind 4
    # (were 4 to lend 0.7/22, 3 would rank first).
    fillers = list(range(100, 100 + NEIGHBOUR_HITS - 1))
    order = adjacent([(7, [1, 2, 3, 4])], [[*fillers, 2, 4]], k=1)
    assert [message_id for _, message_id in order] == [2, 4, 1, 3]


def test_hits_of_several_queries_add_up() -> None:
    # k=1, one-message topics (no neighbours). Priors: 1: 1/2, 2: 1/3, 3: 1/4.
    # Both lists: 1: 1/2 + 1/2 = 1.0, 2: 1/3 + 1/2 = 0.833, 3: 1/4 + 1/3 + 1/3 = 0.917.
    # The second list alone: 1: 0.5, 2: 0.833, 3: 0.583.
    topics = [(7, [1]), (9, [2]), (8, [3])]
    assert adjacent(topics, [[1, 3], [2, 3]], k=1, lead=0) == [
        (7, 1),
        (8, 3),
        (9, 2),
    ]
    assert adjacent(topics, [[2, 3]], k=1, lead=0) == [(9, 2), (8, 3), (7, 1)]


def test_the_best_hits_lead_whatever_their_score() -> None:
    # k=1. Priors: 1, 2: 1/2; 3, 4, 5: 1/3. List A [5, 3, 2] votes 1/2, 1/3, 1/4 and
    # lends 0.7 of each to the neighbours (5 -> 4, 3 -> 4, 2 -> 1); list B [4, 2] votes
    # 1/2, 1/3 (4 -> 3 and 5, 2 -> 1). Fused: 1: 0.908, 2: 1.083, 3: 1.017, 4: 1.417,
    # 5: 1.183. Best hits by rank, then list: 5 (A1), 4 (B1), 3 (A2), 2 (B2).
    topics = [(10, [1, 2]), (20, [3, 4, 5])]
    hits = [[5, 3, 2], [4, 2]]
    ranked = {lead: [m for _, m in adjacent(topics, hits, k=1, lead=lead)] for lead in (0, 2, 3)}
    assert ranked[0] == [4, 5, 2, 3, 1]
    assert ranked[2] == [5, 4, 2, 3, 1]
    assert ranked[3] == [5, 4, 3, 2, 1]  # 3 leads although 2's fused score is higher
    assert [m for _, m in adjacent(topics, hits, k=1)] == ranked[LEAD_HITS]


def test_vector_hits_vote_at_their_weight_lend_neighbours_and_lead_only_when_told() -> None:
    # k=1, one topic: every message has the prior 1/2. Full-text hit 1 votes 1/2 and
    # lends 2 0.7 * 1/2; vector hit 3 votes 0.5 * 1/2 = 1/4 and lends 2 0.7 * 1/4.
    # Scores: 1: 1.0, 2: 0.5 + 0.35 + 0.175 = 1.025, 3: 0.75.
    topics = [(7, [1, 2, 3])]
    order = adjacent(
        topics, [[1]], k=1, lead=0, vector_lead=0, vector_lists=[[3]], vector_weight=0.5
    )
    assert [m for _, m in order] == [2, 1, 3]
    # Without a vector lead only full-text hits lead: 1 goes first; 3 leads nothing.
    order = adjacent(
        topics, [[1]], k=1, lead=1, vector_lead=0, vector_lists=[[3]], vector_weight=0.5
    )
    assert [m for _, m in order] == [1, 2, 3]
    # Vector hit 3 alone: 3: 0.75, 2: 0.675, 1: 0.5, whatever the lead.
    assert [m for _, m in adjacent(topics, [], k=1, vector_lists=[[3]])] == [3, 2, 1]
    # At weight 0 the vector lists count for nothing: conversation order.
    order = adjacent(topics, [], k=1, vector_lists=[[3]], vector_weight=0.0)
    assert [m for _, m in order] == [1, 2, 3]


def test_the_neighbours_share_and_reach_are_parameters() -> None:
    # k=1, one topic: prior 1/2 each. Hit 2 (rank 1) votes 1/2, hit 4 (rank 2) 1/3.
    topics = [(7, [1, 2, 3, 4])]
    # Share 0.1: 1: 0.55, 2: 1.0, 3: 0.5 + 0.05 + 0.033 = 0.583, 4: 0.833.
    shared = adjacent(topics, [[2, 4]], k=1, lead=0, neighbour_weight=0.1)
    assert [m for _, m in shared] == [2, 4, 3, 1]
    # Share 0.7: 1: 0.85, 2: 1.0, 3: 0.5 + 0.35 + 0.233 = 1.083, 4: 0.833.
    default = adjacent(topics, [[2, 4]], k=1, lead=0)
    assert [m for _, m in default] == [3, 2, 1, 4]
    # Reach 0: no hit lends anything; 1 and 3 keep the prior (conversation order).
    unreached = adjacent(topics, [[2, 4]], k=1, lead=0, neighbour_hits=0)
    assert [m for _, m in unreached] == [2, 4, 1, 3]


def test_a_hit_by_a_speaker_the_question_leaves_out_only_lends_its_neighbours() -> None:
    # k=1, one topic: prior 1/2 each. Hit 2 (rank 1) votes 1/2 and lends 1 and 3 0.35.
    topics = [(7, [1, 2, 3])]
    assert [m for _, m in adjacent(topics, [[2]], k=1, lead=0)] == [2, 1, 3]
    # Left out, 2 keeps its prior only (0.5) while 1 and 3 keep what it lent (0.85).
    order = adjacent(topics, [[2]], k=1, lead=0, unnamed={2})
    assert [m for _, m in order] == [1, 3, 2]
    # Hits 2 (rank 1) and 3 (rank 2, 1/3, lending 2 0.233). Scores: 1: 0.85,
    # 2: 0.5 + 0.5 + 0.233 = 1.233, 3: 0.5 + 0.35 + 0.333 = 1.183; 2 leads.
    assert [m for _, m in adjacent(topics, [[2, 3]], k=1, lead=1)] == [2, 3, 1]
    # 2 left out: 2: 0.733, 3: 1.183, 1: 0.85; the best hit 2 does not lead, 3 does.
    order = adjacent(topics, [[2, 3]], k=1, lead=1, unnamed={2})
    assert [m for _, m in order] == [3, 1, 2]
    # A vector hit left out lends its share too: 3 gets 0.7 * 0.5 * 1/2 from 2.
    order = adjacent(topics, [], k=1, vector_lists=[[2]], unnamed={2})
    assert [m for _, m in order] == [1, 3, 2]


def test_a_context_can_turn_the_speaker_rule_off() -> None:
    members = [member(1, 1, 0.0, "Melanie"), member(2, 2, 1.0, "Caroline")]
    on = ResponseContext(user_id=1)
    off = ResponseContext(user_id=1).tuned(excerpt_named_speakers=False)

    def unnamed(context: ResponseContext | None) -> frozenset[int]:
        rules = speaker_rules(Ranking.of(context), ["What has Melanie painted?"], members)
        return rules["unnamed"]

    assert unnamed(on) == {2}
    assert unnamed(None) == {2}
    assert unnamed(off) == set()


def test_messages_of_a_named_day_vote_as_one_more_list_and_never_lead() -> None:
    # k=1, one topic: prior 1/2 each. Hit 1 (rank 1) votes 1/2 and lends 2 0.35. The
    # day's list [4, 3]: 4 votes 1/2 and lends 3 and 5 0.35; 3 votes 1/3 and lends 2 and
    # 4 0.233. Scores: 1: 1.0, 2: 1.083, 3: 1.183, 4: 1.233, 5: 0.85.
    topics = [(7, [1, 2, 3, 4, 5])]
    order = adjacent(topics, [[1]], k=1, lead=0, dated=[4, 3])
    assert [m for _, m in order] == [4, 3, 2, 1, 5]
    # With a lead of one, the full-text hit 1 leads although 4 scores higher.
    order = adjacent(topics, [[1]], k=1, lead=1, dated=[4, 3])
    assert [m for _, m in order] == [1, 4, 3, 2, 5]
    assert [m for _, m in adjacent(topics, [[1]], k=1, lead=0)] == [1, 2, 3, 4, 5]


def test_a_hits_share_fades_with_each_place_away() -> None:
    # The defaults: a hit lends the share (0.6) to the messages beside it, its square
    # (0.36) to those two places away, and so on up to the reach (5 places).
    assert (NEIGHBOUR_WEIGHT, NEIGHBOUR_REACH) == (0.6, 5)
    # k=1, one topic of eight: prior 1/2 each. Hit 2 (rank 1) votes 1/2 and lends
    # 1 and 3 0.3, 4 0.18, 5 0.108, 6 0.065, 7 0.039; 8 is six places away: nothing.
    topics = [(7, [1, 2, 3, 4, 5, 6, 7, 8])]
    order = rank_topic_messages(topics, [[2]], k=1, lead=0)
    assert [m for _, m in order] == [2, 1, 3, 4, 5, 6, 7, 8]
    # Hit 8 (rank 2) votes 1/3 and lends 7 0.2, 6 0.12, 5 0.072, 4 0.043, 3 0.026.
    # Scores: 1: 0.8, 2: 1.0, 3: 0.826, 4: 0.723, 5: 0.680, 6: 0.685, 7: 0.739,
    # 8: 0.833. Two places from 8, 6 now outranks 5, three places from 2.
    order = rank_topic_messages(topics, [[2, 8]], k=1, lead=0)
    assert [m for _, m in order] == [2, 8, 3, 1, 7, 4, 6, 5]
    # Reach 1: only the messages right beside a hit get a share, so 3..7 keep the prior
    # save 3 and 7 (0.3 and 0.2): 2, 8, 1: 0.8, 3: 0.8, 7: 0.7, then 4, 5, 6 in order.
    order = rank_topic_messages(topics, [[2, 8]], k=1, lead=0, neighbour_reach=1)
    assert [m for _, m in order] == [2, 8, 1, 3, 7, 4, 5, 6]


def test_the_context_sets_the_neighbours_reach() -> None:
    assert Ranking.of(ResponseContext(user_id=1)).weights()["neighbour_reach"] == NEIGHBOUR_REACH
    context = ResponseContext(user_id=1).tuned(excerpt_neighbour_reach=2)
    assert Ranking.of(context).weights()["neighbour_reach"] == 2
    assert Ranking().weights() == Ranking.of(ResponseContext(user_id=1)).weights()


def member(message_id: int, seq: int, ts: float, author: str | None) -> Member:
    return Member(message_id, author, "user" if author != "Topica" else "assistant", seq, ts)


def test_replies_are_what_another_speaker_says_next_in_the_sitting() -> None:
    context = ResponseContext(user_id=1, chunk_interval_s=3600, topic_max_gap_s=6 * 3600).tuned(
        excerpt_neighbour_reach=3
    )
    # Given out of order. Ann asks (1), Bo answers (2) and goes on (3), Ann again (4),
    # Bo (5) after a 59-minute pause (the same sitting), Bo (6) after an hour (a new one).
    messages = [
        member(3, 3, 20.0, "Bo"),
        member(1, 1, 0.0, "Ann"),
        member(2, 2, 10.0, "Bo"),
        member(4, 4, 30.0, "Ann"),
        member(5, 5, 30.0 + 59 * 60, "Bo"),
        member(6, 6, 30.0 + 59 * 60 + 3600, "Bo"),
    ]
    assert replies_after(messages, Ranking.of(context)) == {
        1: [(2, 1), (3, 2)],  # 4 is Ann's own
        2: [(4, 2)],
        3: [(4, 1)],
        4: [(5, 1)],  # 6 lies past a sitting's end
    }
    # Within the reach only, and never past a gap in the conversation (seq 7 is not
    # among them) nor where the time goes back (an older conversation stored later).
    assert replies_after(messages, Ranking.of(context.tuned(excerpt_neighbour_reach=1)))[1] == [
        (2, 1)
    ]
    assert (
        replies_after([member(1, 1, 0.0, "Ann"), member(8, 8, 5.0, "Bo")], Ranking.of(context))
        == {}
    )
    assert (
        replies_after([member(1, 1, 50.0, "Ann"), member(2, 2, 5.0, "Bo")], Ranking.of(context))
        == {}
    )
    # Without an author, the role tells the speakers apart.
    unnamed = [Member(1, None, "user", 1, 0.0), Member(2, None, "assistant", 2, 1.0)]
    assert replies_after(unnamed, Ranking.of(context)) == {1: [(2, 1)]}
    # A pause over `topic_max_gap` ends a sitting even under a longer interval.
    wide = ResponseContext(user_id=1, chunk_interval_s=10**9, topic_max_gap_s=60)
    pair = [member(1, 1, 0.0, "Ann"), member(2, 2, 61.0, "Bo")]
    assert replies_after(pair, Ranking.of(wide)) == {}
    assert replies_after([], Ranking.of(context)) == {}


def test_a_hits_share_crosses_a_topics_bound_to_its_replies_only() -> None:
    # k=1, share 0.5, reach 2, no lead. Topic 10 holds 1, 2; topic 20 holds 3, 4. A hit at
    # rank 1 votes 1/2. Priors 1/2 (topic 10), 1/3 (topic 20).
    topics = [(10, [1, 2]), (20, [3, 4])]
    weights = {"neighbour_weight": 0.5, "neighbour_reach": 2}
    ranking = partial(rank_topic_messages, k=1, lead=0, **weights)
    scores = partial(message_scores, topics, k=1, **weights)
    # In the topic alone, hit 2 lends 1 its 1/4; 3 gets nothing (1/3) and ties 4.
    assert ranking(topics, [[2]]) == [(10, 2), (10, 1), (20, 3), (20, 4)]
    # 3 replies to 2 right after it: it gets 1/4 as well and passes 4; 4, two places on,
    # gets 1/8 when it is a reply too.
    replies = {2: [(3, 1), (4, 2)]}
    assert ranking(topics, [[2]], replies=replies)[2:] == [(20, 3), (20, 4)]
    score, _ = scores([[2]], replies=replies)
    assert score == pytest.approx({1: 3 / 4, 2: 1, 3: 1 / 3 + 1 / 4, 4: 1 / 3 + 1 / 8})
    # A reply in the hit's own topic has its share already: no second one.
    score, _ = scores([[3]], replies={3: [(4, 1)]})
    assert score[4] == pytest.approx(1 / 3 + 1 / 4)
    # Without replies (another speaker, a sitting's end), nothing crosses: 2 lends 3
    # nothing, and a hit never lends backwards across a bound (3 to 2).
    assert scores([[2]], replies={})[0][3] == pytest.approx(1 / 3)
    assert scores([[3]], replies={3: [(4, 1)]})[0][2] == pytest.approx(1 / 2)


def test_long_answers_never_lead_and_come_after_every_other_message() -> None:
    # k=1, one topic. Without the rule: 2 leads (best full-text hit), then 1 and 3 by
    # their share of it. 2 being a long answer, it neither leads nor comes before 1 and 3,
    # whose order stays theirs (1 before 3 by conversation order), nor before 4.
    topics = [(10, [1, 2, 3, 4])]
    assert adjacent(topics, [[2]], k=1)[:3] == [(10, 2), (10, 1), (10, 3)]
    assert adjacent(topics, [[2]], k=1, answers={2}) == [(10, 1), (10, 3), (10, 4), (10, 2)]


def row(message_id: int, role: str, chars: int) -> dict:
    return {"id": message_id, "role": role, "content": "x" * chars}


def test_a_long_answer_is_an_assistants_message_over_the_contexts_length() -> None:
    limit = ResponseContext(user_id=1).tuning.excerpt_answer_last_chars
    rows = [
        row(1, "user", limit * 3),
        row(2, "assistant", limit + 1),
        row(3, "assistant", limit),
    ]
    assert long_answers(rows) == {2}
    assert long_answers(
        rows, ResponseContext(user_id=1).tuned(excerpt_answer_last_chars=10).tuning
    ) == {
        2,
        3,
    }


def test_a_vector_lead_puts_the_best_vector_hits_beside_the_full_text_lead_at_their_rank() -> None:
    # k=1, one topic. Full-text [1, 2] and vector hits [4, 5, 1]. A vector lead of 1 adds
    # 4 (vector rank 0) to the full-text lead 1 (rank 0): the tie goes to full text, then
    # 4 before the rest. A vector lead of 2 adds 5 (rank 1); one of 3 adds 1 too, which
    # leads already and counts once, at its full-text rank. A long answer (`answers`) or
    # an unnamed author's hit never leads, so 4 gives way to the next vector hit.
    topics = [(7, [1, 2, 3, 4, 5])]
    hits, vectors = [[1, 2]], [[4, 5, 1]]

    def order(**rules: object) -> list[int]:
        ranked = adjacent(topics, hits, k=1, lead=1, vector_lists=vectors, **rules)
        return [m for _, m in ranked]

    assert order(vector_lead=0)[:1] == [1]
    assert order(vector_lead=1)[:2] == [1, 4]
    assert order(vector_lead=2)[:3] == [1, 4, 5]
    assert order(vector_lead=3)[:3] == [1, 4, 5]
    assert order(vector_lead=1, answers={4})[:2] == [1, 5]
    assert order(vector_lead=1, unnamed={4})[:2] == [1, 5]
    assert order(vector_lead=1, answers={4})[-1] == 4


def said(message_id: int, role: str, content: str) -> dict:
    return {"id": message_id, "role": role, "content": content}


def test_a_standing_instruction_is_the_users_and_opens_with_always_never_or_from_now_on() -> None:
    rows = [
        said(1, "user", "Always include status codes when I ask about API errors."),
        said(2, "user", "  Please always answer in bullet points."),
        said(3, "user", "Never book flights before 9 am for me."),
        said(4, "user", "From now on, dates as Month Day, Year."),
        said(5, "user", "Всегда пиши даты полностью, когда я спрашиваю о сроках."),
        said(6, "user", "Впредь отвечай короче."),
        said(7, "user", "I always forget my keys."),  # a habit told, not an instruction
        said(8, "assistant", "Always check the status code first."),  # not the user's
        said(9, "user", "Alwaysbetter is the shop's name."),
        said(10, "user", "Я никогда не был в Лиссабоне, а ты?"),
        said(11, "user", "Never mind, let's plan the trip instead."),
    ]
    everything = {row["id"] for row in rows}
    assert standing_rules(rows, everything) == {1, 2, 3, 4, 5, 6}
    # Only those among the turn's hits.
    assert standing_rules(rows, {1, 5, 7, 8}) == {1, 5}
    assert standing_rules(rows, set()) == frozenset()


def test_an_opener_followed_by_the_past_tells_what_was_not_what_to_do() -> None:
    statements = [
        "Never been to Porto, what should I see there?",
        "Always wanted to learn the piano.",
        "Never thought about it, to be honest.",
        "Никогда не слышал о таком фестивале.",
        "Всегда хотела побывать в Японии.",
        "Всегда ли нужно бронировать заранее?",
    ]
    instructions = [
        "Always highlight the numbers that changed.",  # "-ght", not a past form
        "Never, ever share my address.",
        "Никогда не пиши мне капсом.",
    ]
    rows = [said(i, "user", text) for i, text in enumerate([*statements, *instructions])]
    found = standing_rules(rows, {row["id"] for row in rows})
    assert found == set(range(len(statements), len(rows)))


def test_standing_instructions_the_hits_reach_lead_before_everything_at_most_rule_lead() -> None:
    # k=1, one topic; 2 is the best full-text hit and leads, then its neighbours.
    topics = [(10, [1, 2, 3, 4, 5, 6])]
    plain = adjacent(topics, [[2]], k=1, rule_lead=3)
    assert plain[:3] == [(10, 2), (10, 1), (10, 3)]
    # The instructions lead before the full-text lead, in the order they ranked.
    ruled = adjacent(topics, [[2]], k=1, rules={5, 1}, rule_lead=3)
    assert ruled[:3] == [(10, 1), (10, 5), (10, 2)]
    # At most `rule_lead` of them; none with 0.
    assert adjacent(topics, [[2]], k=1, rules={5, 1, 6}, rule_lead=2)[:3] == [
        (10, 1),
        (10, 5),
        (10, 2),
    ]
    assert adjacent(topics, [[2]], k=1, rules={5, 1}, rule_lead=0) == plain
    assert Ranking().weights()["rule_lead"] == PROFILE.excerpt_rule_hits
